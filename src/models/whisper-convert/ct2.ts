// Reader for CTranslate2's model.bin (the format faster-whisper checkpoints ship in). The layout, as
// ctranslate2/specs/model_spec.py writes it (binary version 6): u32 version, string spec name, u32 spec
// revision, u32 variable count, then per variable: string name, u8 rank, u32 dims[rank], u8 dtype id,
// u32 byte count, raw little-endian data; then u32 alias count and (alias, target) string pairs.
// A string is u16 length (including a trailing NUL) followed by the bytes.

/** CTranslate2's DataType ids. */
export const Ct2Dtype = {FLOAT32: 0, INT8: 1, INT16: 2, INT32: 3, FLOAT16: 4, BFLOAT16: 5} as const;

const DTYPE_WIDTH: Record<number, number> = {0: 4, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2};
const DTYPE_NAME: Record<number, string> = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16", 5: "bfloat16"};

export interface Ct2Variable {
  dims: number[];
  dtype: number;
  /** A view into the file's buffer (no copy). */
  data: Buffer;
}

export interface Ct2Model {
  spec: string;
  revision: number;
  variables: Map<string, Ct2Variable>;
}

export class Ct2FormatError extends Error {
  override readonly name = "Ct2FormatError";
}

export const dtypeName = (id: number): string => DTYPE_NAME[id] ?? `dtype ${id}`;

/** Parses a whole model.bin held in memory; aliases become extra names for their targets. */
export function readCt2(buf: Buffer): Ct2Model {
  let at = 0;
  const need = (n: number, what: string) => {
    if (at + n > buf.length) throw new Ct2FormatError(`model.bin ends inside ${what} (at byte ${at} of ${buf.length}); the file is truncated`);
  };
  const u8 = (what: string) => (need(1, what), buf.readUInt8(at++));
  const u16 = (what: string) => (need(2, what), (at += 2), buf.readUInt16LE(at - 2));
  const u32 = (what: string) => (need(4, what), (at += 4), buf.readUInt32LE(at - 4));
  const str = (what: string) => {
    const n = u16(what);
    need(n, what);
    const s = buf.toString("utf8", at, at + Math.max(0, n - 1));
    at += n;
    return s;
  };
  const version = u32("the header");
  if (version !== 6) {
    throw new Ct2FormatError(`model.bin has CTranslate2 binary version ${version}; svc reads version 6 (CTranslate2 3.x and 4.x)`);
  }
  const spec = str("the spec name");
  const revision = u32("the spec revision");
  const count = u32("the variable count");
  const variables = new Map<string, Ct2Variable>();
  for (let i = 0; i < count; i++) {
    const name = str(`variable ${i}'s name`);
    const rank = u8(name);
    const dims: number[] = [];
    for (let d = 0; d < rank; d++) dims.push(u32(name));
    const dtype = u8(name);
    const bytes = u32(name);
    const width = DTYPE_WIDTH[dtype];
    if (width === undefined) throw new Ct2FormatError(`variable ${name} has unknown dtype id ${dtype}`);
    const elements = dims.reduce((a, b) => a * b, 1);
    if (elements * width !== bytes) throw new Ct2FormatError(`variable ${name}: ${bytes} bytes for ${dims.join("x") || "a scalar"} of ${dtypeName(dtype)}`);
    need(bytes, name);
    variables.set(name, {dims, dtype, data: buf.subarray(at, at + bytes)});
    at += bytes;
  }
  if (at < buf.length) {
    const aliases = u32("the alias count");
    for (let i = 0; i < aliases; i++) {
      const alias = str("an alias");
      const target = str("an alias target");
      const v = variables.get(target);
      if (v) variables.set(alias, v);
    }
  }
  return {spec, revision, variables};
}

/** A scalar integer variable (num_heads, flags), as a number. */
export function scalar(v: Ct2Variable | undefined): number | undefined {
  if (!v || v.dims.length !== 0) return undefined;
  switch (v.dtype) {
    case Ct2Dtype.INT8: return v.data.readInt8(0);
    case Ct2Dtype.INT16: return v.data.readInt16LE(0);
    case Ct2Dtype.INT32: return v.data.readInt32LE(0);
    case Ct2Dtype.FLOAT32: return v.data.readFloatLE(0);
    default: return undefined;
  }
}
