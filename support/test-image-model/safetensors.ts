// A streaming safetensors writer and a header-only reader for the test image model's files (the project's other
// safetensors code reads a file whole and writes F32 only; these files run to tens of MB and hold F16 and I64).
//
// The format: an 8-byte little-endian header length, a JSON header giving each tensor's dtype, shape (PyTorch
// order: the last dimension is the contiguous one) and byte range, then the raw little-endian data. Each tensor's
// bytes are made only when it is written, so a file never sits in memory whole.

import {open} from "node:fs/promises";
import {floatToHalf} from "../../src/models/half-float.ts";

export type Dtype = "F32" | "F16" | "BF16" | "I64";

const WIDTH: Record<Dtype, number> = {F32: 4, F16: 2, BF16: 2, I64: 8};

export interface TensorSpec {
  name: string;
  dtype: Dtype;
  /** PyTorch order, as the publishers' files state it (a Linear weight is [out, in], a conv kernel [out, in, kh, kw]). */
  shape: number[];
  /** The tensor's raw bytes in `dtype`, made when the writer reaches it. */
  bytes: () => Uint8Array;
}

export const elementCount = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Float values encoded as `dtype` (F32, F16 rounded to nearest even, BF16 rounded to nearest even). */
export function encodeFloats(values: Float32Array, dtype: Exclude<Dtype, "I64">): Uint8Array {
  if (dtype === "F32") return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const out = new Uint16Array(values.length);
  if (dtype === "F16") {
    for (let i = 0; i < values.length; i++) out[i] = floatToHalf(values[i]!);
  } else {
    const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
    for (let i = 0; i < values.length; i++) {
      const b = bits[i]!;
      out[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16; // round to nearest even (no NaNs are written here)
    }
  }
  return new Uint8Array(out.buffer);
}

/**
 * Writes `tensors` (in the order given) to `path` with `metadata` as the header's __metadata__. The header is padded
 * with spaces so the data starts 8-byte aligned, as the reference writer does.
 */
export async function writeSafetensors(path: string, tensors: readonly TensorSpec[], metadata: Record<string, string> = {}): Promise<void> {
  const header: Record<string, unknown> = {__metadata__: metadata};
  let offset = 0;
  for (const t of tensors) {
    if (t.name in header) throw new Error(`safetensors: tensor ${t.name} named twice`);
    const size = elementCount(t.shape) * WIDTH[t.dtype];
    header[t.name] = {dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + size]};
    offset += size;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += " ";
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const file = await open(path, "w");
  try {
    await file.write(Buffer.concat([head, Buffer.from(json, "utf8")]));
    for (const t of tensors) {
      const bytes = t.bytes();
      const size = elementCount(t.shape) * WIDTH[t.dtype];
      if (bytes.byteLength !== size) throw new Error(`safetensors: tensor ${t.name} made ${bytes.byteLength} bytes, its shape needs ${size}`);
      await file.write(bytes);
    }
  } finally {
    await file.close();
  }
}

export interface HeaderEntry {
  dtype: string;
  shape: number[];
}

/** The tensors a safetensors file declares (name → dtype and shape), read from its header alone. */
export async function readSafetensorsHeader(path: string): Promise<Map<string, HeaderEntry>> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(8);
    await file.read(head, 0, 8, 0);
    const length = Number(head.readBigUInt64LE(0));
    const json = Buffer.alloc(length);
    const {bytesRead} = await file.read(json, 0, length, 8);
    if (bytesRead !== length) throw new Error(`${path}: the header is cut short`);
    const out = new Map<string, HeaderEntry>();
    for (const [name, v] of Object.entries(JSON.parse(json.toString("utf8")) as Record<string, HeaderEntry>)) {
      if (name !== "__metadata__") out.set(name, {dtype: v.dtype, shape: v.shape});
    }
    return out;
  } finally {
    await file.close();
  }
}
