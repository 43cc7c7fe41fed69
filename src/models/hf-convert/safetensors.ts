// A reader for Hugging Face `.safetensors` files: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw data. BERT-sized checkpoints (up to a few
// hundred MB) are read whole; every float dtype a BERT checkpoint ships in comes back as float32.

import {readFile} from "node:fs/promises";

export interface SafetensorInfo {
  dtype: string;
  /** Row-major (PyTorch) order: the last dimension is the contiguous one. */
  shape: number[];
  offsets: [number, number];
}

export class SafetensorsFile {
  private constructor(private readonly data: Buffer, private readonly dataStart: number,
    readonly tensors: ReadonlyMap<string, SafetensorInfo>) {}

  static async open(path: string): Promise<SafetensorsFile> {
    return SafetensorsFile.parse(await readFile(path), path);
  }

  /** Checks the header and every byte range, so a truncated file is refused before any conversion starts. */
  static parse(buf: Buffer, path = "model.safetensors"): SafetensorsFile {
    if (buf.length < 8) throw new Error(`${path}: too short to be a safetensors file`);
    const headerLength = Number(buf.readBigUInt64LE(0));
    if (headerLength <= 0 || 8 + headerLength > buf.length) {
      throw new Error(`${path}: header length ${headerLength} does not fit the file (${buf.length} bytes); the file is truncated or not safetensors`);
    }
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(buf.toString("utf8", 8, 8 + headerLength)) as Record<string, unknown>;
    } catch {
      throw new Error(`${path}: the safetensors header is not JSON`);
    }
    const dataStart = 8 + headerLength;
    const tensors = new Map<string, SafetensorInfo>();
    for (const [name, v] of Object.entries(header)) {
      if (name === "__metadata__") continue;
      const info = v as {dtype?: unknown; shape?: unknown; data_offsets?: unknown};
      if (typeof info.dtype !== "string" || !Array.isArray(info.shape) || !Array.isArray(info.data_offsets)) {
        throw new Error(`${path}: tensor ${name} has a malformed header entry`);
      }
      const [start, end] = info.data_offsets as number[];
      if (!(Number.isInteger(start) && Number.isInteger(end) && start! <= end! && dataStart + end! <= buf.length)) {
        throw new Error(`${path}: tensor ${name} ends past the end of the file; the file is truncated`);
      }
      tensors.set(name, {dtype: info.dtype, shape: info.shape.map(Number), offsets: [start!, end!]});
    }
    return new SafetensorsFile(buf, dataStart, tensors);
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** The tensor's values as float32 (F32 copied, F16/BF16 widened exactly). */
  float32(name: string): Float32Array {
    const info = this.tensors.get(name);
    if (!info) throw new Error(`safetensors: no tensor ${name}`);
    const count = info.shape.reduce((a, b) => a * b, 1);
    const start = this.dataStart + info.offsets[0];
    const bytes = info.offsets[1] - info.offsets[0];
    const width = {F32: 4, F16: 2, BF16: 2}[info.dtype];
    if (width === undefined) throw new Error(`safetensors: tensor ${name} has dtype ${info.dtype}; F32, F16 and BF16 are supported`);
    if (bytes !== count * width) throw new Error(`safetensors: tensor ${name} holds ${bytes} bytes for shape ${info.shape.join("x")} of ${info.dtype}`);
    const out = new Float32Array(count);
    if (info.dtype === "F32") {
      // Copy through a Uint8Array view: the source offset need not be 4-byte aligned.
      new Uint8Array(out.buffer).set(this.data.subarray(start, start + bytes));
    } else if (info.dtype === "BF16") {
      const u32 = new Uint32Array(out.buffer);
      for (let i = 0; i < count; i++) u32[i] = this.data.readUInt16LE(start + 2 * i) << 16;
    } else {
      for (let i = 0; i < count; i++) out[i] = halfToFloat(this.data.readUInt16LE(start + 2 * i));
    }
    return out;
  }
}

/** IEEE 754 binary16 → number (exact). */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** Writes a safetensors file (F32 only): the classifier fixture and tests build checkpoints with it. */
export function encodeSafetensors(tensors: Record<string, {shape: number[]; data: Float32Array}>): Buffer {
  const header: Record<string, unknown> = {__metadata__: {format: "pt"}};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = {dtype: "F32", shape: t.shape, data_offsets: [offset, offset + t.data.byteLength]};
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so the data starts 8-byte aligned, as the reference writer does.
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += " ";
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([head, Buffer.from(json, "utf8"),
    ...Object.values(tensors).map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]);
}
