// Block quantisation of F32 weights into the two ggml types the default model ships: Q8_0 (its token embedding)
// and Q4_1 (its matrices). The test model is written in these types so that it runs through the same ggml kernels
// (and the same row-class behaviour the exactness probe measures) as the real model, only much smaller.
// Layouts, from ggml's ggml-common.h: a block covers 32 consecutive values of a row;
//   Q8_0: f16 d, then 32 int8 q;             x = d * q,         d = max|x| / 127
//   Q4_1: f16 d, f16 m, then 16 bytes of q;  x = m + d * q,     d = (max - min) / 15, m = min
//   (byte j holds value j in its low nibble and value j + 16 in its high nibble)

import {floatToHalf, fromHalfBits} from "./half-float.ts";

export const GGML_TYPE = {F32: 0, Q4_1: 3, Q8_0: 8} as const;
export type GgmlType = (typeof GGML_TYPE)[keyof typeof GGML_TYPE];

export const QUANT_BLOCK = 32;
const BLOCK_BYTES: Record<GgmlType, number> = {[GGML_TYPE.F32]: 4 * QUANT_BLOCK, [GGML_TYPE.Q4_1]: 20, [GGML_TYPE.Q8_0]: 34};

/** Bytes a tensor of `count` values takes in `type` (count a multiple of 32 for the block types). */
export function tensorBytes(type: GgmlType, count: number): number {
  if (type === GGML_TYPE.F32) return 4 * count;
  if (count % QUANT_BLOCK !== 0) throw new Error(`a quantised tensor needs a multiple of ${QUANT_BLOCK} values per row, got ${count}`);
  return (count / QUANT_BLOCK) * BLOCK_BYTES[type];
}


/** `data` (row-major, rows of a multiple of 32 values) as the bytes of a `type` tensor. */
export function quantize(type: GgmlType, data: Float32Array): Uint8Array {
  if (type === GGML_TYPE.F32) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = Buffer.alloc(tensorBytes(type, data.length));
  for (let b = 0, at = 0; b < data.length; b += QUANT_BLOCK) {
    const block = data.subarray(b, b + QUANT_BLOCK);
    at = type === GGML_TYPE.Q8_0 ? q8Block(block, out, at) : q4Block(block, out, at);
  }
  return out;
}

function q8Block(x: Float32Array, out: Buffer, at: number): number {
  let amax = 0;
  for (const v of x) amax = Math.max(amax, Math.abs(v));
  const d = amax / 127;
  const dBits = floatToHalf(d);
  out.writeUInt16LE(dBits, at);
  // ggml rounds with the f32 scale, not the stored half one.
  const id = d ? 1 / d : 0;
  for (let i = 0; i < QUANT_BLOCK; i++) out.writeInt8(Math.max(-128, Math.min(127, roundAway(x[i]! * id))), at + 2 + i);
  return at + 34;
}

function q4Block(x: Float32Array, out: Buffer, at: number): number {
  let min = Infinity;
  let max = -Infinity;
  for (const v of x) {
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  const d = (max - min) / 15;
  const id = d ? 1 / d : 0;
  out.writeUInt16LE(floatToHalf(d), at);
  out.writeUInt16LE(floatToHalf(min), at + 2);
  const q = (v: number) => Math.min(15, Math.trunc((v - min) * id + 0.5));
  for (let j = 0; j < QUANT_BLOCK / 2; j++) out[at + 4 + j] = q(x[j]!) | (q(x[j + QUANT_BLOCK / 2]!) << 4);
  return at + 20;
}

/** The values a `type` tensor's bytes stand for (for tests of the quantisers). */
export function dequantize(type: GgmlType, bytes: Uint8Array, count: number): Float32Array {
  const out = new Float32Array(count);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (type === GGML_TYPE.F32) return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + 4 * count));
  for (let b = 0; b < count / QUANT_BLOCK; b++) {
    const at = b * BLOCK_BYTES[type];
    const d = fromHalfBits(buf.readUInt16LE(at));
    for (let i = 0; i < QUANT_BLOCK; i++) {
      out[b * QUANT_BLOCK + i] = type === GGML_TYPE.Q8_0
        ? d * buf.readInt8(at + 2 + i)
        : fromHalfBits(buf.readUInt16LE(at + 2)) + d * (i < 16 ? buf[at + 4 + i]! & 15 : buf[at + 4 + i - 16]! >>> 4);
    }
  }
  return out;
}

/** C's roundf: halves away from zero (Math.round takes -2.5 to -2). */
function roundAway(v: number): number {
  return Math.sign(v) * Math.round(Math.abs(v));
}
