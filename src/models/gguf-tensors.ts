// The tensor names and shapes of a GGUF file, and the string values of its metadata asked for, read from its header
// and nothing else. node-llama-cpp's
// readGgufFileInfo does this too, but on a file cut short it waits forever for bytes that never come (and keeps the
// process alive); this reader reads the header in bounded chunks and calls a short file what it is.

import {open, type FileHandle} from "node:fs/promises";

export class GgufHeaderError extends Error {
  override readonly name = "GgufHeaderError";
}

/** Byte sizes of GGUF's fixed-size value types, by type id (8 is a string, 9 an array). */
const FIXED: Readonly<Record<number, number>> = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8};
const MAX_HEADER_BYTES = 1 << 30;

class Cursor {
  private buf = Buffer.alloc(0);
  private start = 0;
  pos = 0;

  constructor(private readonly fd: FileHandle, private readonly size: number) {}

  private async need(n: number): Promise<void> {
    if (this.pos + n > this.size) throw new GgufHeaderError("its GGUF header ends early; the file is truncated");
    if (this.pos + n > MAX_HEADER_BYTES) throw new GgufHeaderError("its GGUF header is implausibly long");
    if (this.pos >= this.start && this.pos + n <= this.start + this.buf.length) return;
    const length = Math.min(this.size - this.pos, Math.max(n, 1 << 20));
    this.buf = Buffer.alloc(length);
    await this.fd.read(this.buf, 0, length, this.pos);
    this.start = this.pos;
  }

  async u32(): Promise<number> {
    await this.need(4);
    const v = this.buf.readUInt32LE(this.pos - this.start);
    this.pos += 4;
    return v;
  }

  async peekU32(): Promise<number> {
    await this.need(4);
    return this.buf.readUInt32LE(this.pos - this.start);
  }

  async u64(): Promise<number> {
    await this.need(8);
    const v = Number(this.buf.readBigUInt64LE(this.pos - this.start));
    this.pos += 8;
    return v;
  }

  async string(): Promise<string> {
    const n = await this.u64();
    await this.need(n);
    const s = this.buf.toString("utf8", this.pos - this.start, this.pos - this.start + n);
    this.pos += n;
    return s;
  }

  async skip(type: number): Promise<void> {
    if (type === 8) {
      // Read first: `this.pos += await ...` would add to the position from before the length was read.
      const length = await this.u64();
      this.pos += length;
    } else if (type === 9) {
      const inner = await this.u32();
      const count = await this.u64();
      if (inner === 8 || inner === 9) for (let i = 0; i < count; i++) await this.skip(inner);
      else if (FIXED[inner] !== undefined) this.pos += count * FIXED[inner]!;
      else throw new GgufHeaderError(`its GGUF header has an array of unknown type ${inner}`);
    } else if (FIXED[type] !== undefined) {
      this.pos += FIXED[type]!;
    } else {
      throw new GgufHeaderError(`its GGUF header has a value of unknown type ${type}`);
    }
    if (this.pos > this.size) throw new GgufHeaderError("its GGUF header ends early; the file is truncated");
  }
}

/** Name → shape (PyTorch order: the contiguous dimension last) of every tensor the GGUF at `path` lists. */
export async function ggufTensorShapes(path: string): Promise<Map<string, number[]>> {
  return (await readGgufHeader(path)).tensors;
}

export interface GgufHeader {
  tensors: Map<string, number[]>;
  /** The metadata values asked for that are strings or arrays of strings (a vocabulary's tokens and merges). */
  strings: Map<string, string | string[]>;
}

export async function readGgufHeader(path: string, stringKeys: readonly string[] = []): Promise<GgufHeader> {
  const fd = await open(path, "r");
  try {
    const c = new Cursor(fd, (await fd.stat()).size);
    if ((await c.u32()) !== 0x46554747) throw new GgufHeaderError("it does not start with GGUF");
    const version = await c.u32();
    if (version < 2) throw new GgufHeaderError(`it is GGUF version ${version}; 2 and later are read`);
    const tensorCount = await c.u64();
    const kvs = await c.u64();
    const strings = new Map<string, string | string[]>();
    for (let i = 0; i < kvs; i++) {
      const key = await c.string();
      const type = await c.u32();
      if (!stringKeys.includes(key)) {
        await c.skip(type);
      } else if (type === 8) {
        strings.set(key, await c.string());
      } else if (type === 9 && (await c.peekU32()) === 8) {
        await c.u32();
        const count = await c.u64();
        const list: string[] = [];
        for (let j = 0; j < count; j++) list.push(await c.string());
        strings.set(key, list);
      } else {
        await c.skip(type);
      }
    }
    const tensors = new Map<string, number[]>();
    for (let i = 0; i < tensorCount; i++) {
      const name = await c.string();
      const dims = await c.u32();
      const shape: number[] = [];
      for (let d = 0; d < dims; d++) shape.push(await c.u64());
      await c.u32(); // type
      await c.u64(); // offset
      tensors.set(name, shape.reverse());
    }
    return {tensors, strings};
  } finally {
    await fd.close();
  }
}
