// A minimal GGUF v3 reader (metadata only) and writer: the HF → GGUF converter writes with it, and the test
// fixtures build tiny models with it. The reader keeps
// each value's GGUF type so that keys copied from a real model (the tokenizer) are written back with
// exactly the types llama.cpp expects; llama.cpp rejects e.g. a token_type array of the wrong width.
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (all little-endian).

import {open} from "node:fs/promises";
import {GGML_TYPE, quantize, type GgmlType} from "./gguf-quantize.ts";

// A plain object rather than an enum: tsx transpiles file by file, and const enums do not cross files.
export const GgufType = {
  UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8,
  ARRAY: 9, UINT64: 10, INT64: 11, FLOAT64: 12,
} as const;
export type GgufType = (typeof GgufType)[keyof typeof GgufType];
type ScalarType = Exclude<GgufType, typeof GgufType.ARRAY>;

/** 64-bit integers are bigints so that no id or size is silently rounded. */
export type GgufScalar = number | bigint | boolean | string;

export type GgufValue =
  | {type: ScalarType; value: GgufScalar}
  | {type: typeof GgufType.ARRAY; itemType: ScalarType; value: GgufScalar[]};

/** Insertion-ordered, like the file. */
export type GgufMetadata = Map<string, GgufValue>;

/** Builders for the value types the fixtures write. */
export const gv = {
  u32: (value: number): GgufValue => ({type: GgufType.UINT32, value}),
  f32: (value: number): GgufValue => ({type: GgufType.FLOAT32, value}),
  bool: (value: boolean): GgufValue => ({type: GgufType.BOOL, value}),
  str: (value: string): GgufValue => ({type: GgufType.STRING, value}),
};

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;

/** Thrown by the cursor when the bytes read so far end inside the metadata; the reader then reads more. */
class ShortRead extends Error {}

class Cursor {
  pos = 0;
  constructor(private readonly buf: Buffer) {}

  private take(n: number): number {
    if (this.pos + n > this.buf.length) throw new ShortRead();
    const at = this.pos;
    this.pos += n;
    return at;
  }

  u32(): number {
    return this.buf.readUInt32LE(this.take(4));
  }

  u64(): bigint {
    return this.buf.readBigUInt64LE(this.take(8));
  }

  /** A u64 length or count; anything beyond 2^53 is corruption, not data. */
  count(): number {
    const n = this.u64();
    if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`GGUF: implausible length ${n}`);
    return Number(n);
  }

  str(): string {
    const n = this.count();
    const at = this.take(n);
    return this.buf.toString("utf8", at, at + n);
  }

  scalar(type: GgufType): GgufScalar {
    const b = this.buf;
    switch (type) {
      case GgufType.UINT8: return b.readUInt8(this.take(1));
      case GgufType.INT8: return b.readInt8(this.take(1));
      case GgufType.UINT16: return b.readUInt16LE(this.take(2));
      case GgufType.INT16: return b.readInt16LE(this.take(2));
      case GgufType.UINT32: return b.readUInt32LE(this.take(4));
      case GgufType.INT32: return b.readInt32LE(this.take(4));
      case GgufType.FLOAT32: return b.readFloatLE(this.take(4));
      case GgufType.BOOL: return b.readUInt8(this.take(1)) !== 0;
      case GgufType.STRING: return this.str();
      case GgufType.UINT64: return b.readBigUInt64LE(this.take(8));
      case GgufType.INT64: return b.readBigInt64LE(this.take(8));
      case GgufType.FLOAT64: return b.readDoubleLE(this.take(8));
      default: throw new Error(`GGUF: unknown value type ${type}`);
    }
  }

  value(): GgufValue {
    const type = this.u32() as GgufType;
    if (type !== GgufType.ARRAY) return {type, value: this.scalar(type)} as GgufValue;
    const itemType = this.u32() as ScalarType;
    if ((itemType as number) === GgufType.ARRAY) throw new Error("GGUF: nested arrays are not supported");
    const n = this.count();
    const value: GgufScalar[] = new Array(n);
    for (let i = 0; i < n; i++) value[i] = this.scalar(itemType);
    return {type, itemType, value};
  }
}

export interface GgufHeader {
  version: number;
  tensorCount: number;
  metadata: GgufMetadata;
}

/**
 * Reads the header and all metadata key/values, not the tensor infos or data. Reads the file's head in
 * growing chunks: a tokenizer's metadata is a few MB, the weights behind it may be many GB.
 */
export async function readGgufMetadata(path: string): Promise<GgufHeader> {
  const fh = await open(path, "r");
  try {
    const size = (await fh.stat()).size;
    for (let want = Math.min(size, 8 << 20); ; want = Math.min(size, want * 2)) {
      const buf = Buffer.alloc(want);
      await fh.read(buf, 0, want, 0);
      try {
        return parseHeader(buf, path);
      } catch (e) {
        if (!(e instanceof ShortRead)) throw e;
        if (want >= size) throw new Error(`GGUF: ${path} ends inside its metadata`);
      }
    }
  } finally {
    await fh.close();
  }
}

function parseHeader(buf: Buffer, path: string): GgufHeader {
  const c = new Cursor(buf);
  if (c.u32() !== MAGIC) throw new Error(`GGUF: ${path} does not start with "GGUF"`);
  const version = c.u32();
  if (version !== 2 && version !== 3) throw new Error(`GGUF: ${path} has unsupported version ${version}`);
  const tensorCount = c.count();
  const kvCount = c.count();
  const metadata: GgufMetadata = new Map();
  for (let i = 0; i < kvCount; i++) {
    const key = c.str();
    metadata.set(key, c.value());
  }
  return {version, tensorCount, metadata};
}

export interface GgufTensor {
  name: string;
  /** ggml order: ne0 (the contiguous one) first. */
  dims: number[];
  /** `data` must hold exactly the product of dims floats. */
  data: Float32Array;
  /** How the values are stored (default F32); Q8_0 and Q4_1 need rows (dims[0]) of a multiple of 32. */
  type?: GgmlType;
}

export interface WriteGgufOptions {
  /** Called with the bytes written so far (for a progress display). */
  onProgress?: (done: number, total: number) => void;
}

/** Serializes a GGUF v3 file; tensor data is aligned to `general.alignment` (default 32) as llama.cpp requires. */
export async function writeGguf(path: string, metadata: GgufMetadata, tensors: GgufTensor[], opts: WriteGgufOptions = {}): Promise<void> {
  const alignValue = metadata.get("general.alignment");
  const alignment = alignValue && alignValue.type !== GgufType.ARRAY ? Number(alignValue.value) : DEFAULT_ALIGNMENT;
  const w = new Writer();
  w.u32(MAGIC);
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.size);
  for (const [key, v] of metadata) {
    w.str(key);
    w.u32(v.type);
    if (v.type === GgufType.ARRAY) {
      w.u32(v.itemType);
      w.u64(v.value.length);
      for (const item of v.value) w.scalar(v.itemType, item);
    } else {
      w.scalar(v.type, v.value);
    }
  }
  let offset = 0;
  const stored: Uint8Array[] = [];
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (t.data.length !== n) throw new Error(`GGUF: tensor ${t.name} has ${t.data.length} values for dims ${t.dims.join("x")}`);
    const type = t.type ?? GGML_TYPE.F32;
    if (type !== GGML_TYPE.F32 && t.dims[0]! % 32 !== 0) {
      throw new Error(`GGUF: tensor ${t.name} has rows of ${t.dims[0]} values; type ${type} needs a multiple of 32`);
    }
    const bytes = quantize(type, t.data);
    stored.push(bytes);
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(type);
    w.u64(offset);
    offset = alignUp(offset + bytes.byteLength, alignment);
  }
  const head = w.done();
  const parts: Uint8Array[] = [head, new Uint8Array(alignUp(head.length, alignment) - head.length)];
  for (const bytes of stored) {
    parts.push(bytes, new Uint8Array(alignUp(bytes.length, alignment) - bytes.length));
  }
  // Float32Array is host-endian; every platform Node runs on here is little-endian, as GGUF is.
  const total = parts.reduce((a, p) => a + p.length, 0);
  const fh = await open(path, "w");
  try {
    let done = 0;
    for (const p of parts) {
      await fh.write(p);
      done += p.length;
      opts.onProgress?.(done, total);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

/** Appends to a list of small buffers; metadata holds ~100k strings, so no per-write reallocation. */
class Writer {
  private readonly chunks: Buffer[] = [];

  private fixed(n: number, fill: (b: Buffer) => void): void {
    const b = Buffer.allocUnsafe(n);
    fill(b);
    this.chunks.push(b);
  }

  u32(n: number): void {
    this.fixed(4, (b) => b.writeUInt32LE(n));
  }

  u64(n: number | bigint): void {
    this.fixed(8, (b) => b.writeBigUInt64LE(BigInt(n)));
  }

  str(s: string): void {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.chunks.push(bytes);
  }

  scalar(type: GgufType, v: GgufScalar): void {
    switch (type) {
      case GgufType.UINT8: return this.fixed(1, (b) => b.writeUInt8(Number(v)));
      case GgufType.INT8: return this.fixed(1, (b) => b.writeInt8(Number(v)));
      case GgufType.UINT16: return this.fixed(2, (b) => b.writeUInt16LE(Number(v)));
      case GgufType.INT16: return this.fixed(2, (b) => b.writeInt16LE(Number(v)));
      case GgufType.UINT32: return this.fixed(4, (b) => b.writeUInt32LE(Number(v)));
      case GgufType.INT32: return this.fixed(4, (b) => b.writeInt32LE(Number(v)));
      case GgufType.FLOAT32: return this.fixed(4, (b) => b.writeFloatLE(Number(v)));
      case GgufType.BOOL: return this.fixed(1, (b) => b.writeUInt8(v ? 1 : 0));
      case GgufType.STRING: return this.str(String(v));
      case GgufType.UINT64: return this.fixed(8, (b) => b.writeBigUInt64LE(BigInt(v)));
      case GgufType.INT64: return this.fixed(8, (b) => b.writeBigInt64LE(BigInt(v)));
      case GgufType.FLOAT64: return this.fixed(8, (b) => b.writeDoubleLE(Number(v)));
      default: throw new Error(`GGUF: cannot write value type ${type}`);
    }
  }

  done(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
