// A CTranslate2 Whisper checkpoint → the ggml file whisper.cpp loads (the layout of whisper.cpp's own
// convert-pt-to-ggml.py): magic, eleven int32 hparams, the mel filterbank, the byte-level vocabulary, then
// tensors named as OpenAI's PyTorch checkpoint names them, dims innermost first. whisper.cpp allocates
// each tensor with a fixed type and refuses a file whose type differs: matrices and convolution kernels
// float16, biases, norms and positional embeddings float32.
//
// CTranslate2 stores the self-attention projections fused (q, k, v stacked on the output axis, with a zero
// key bias: Whisper's key projection has none) and the cross-attention key and value fused; we split them.

import {halfToFloat} from "../hf-convert/safetensors.ts";
import {Ct2Dtype, dtypeName, scalar, type Ct2Model, type Ct2Variable} from "./ct2.ts";
import {melFilters, N_FFT} from "./mel-filters.ts";
import {floatToHalf} from "../half-float.ts";

const GGML_MAGIC = 0x67676d6c;
const GGML_F32 = 0;
const GGML_F16 = 1;
/** whisper.cpp's hparams.ftype for a float16 model. */
const FTYPE_F16 = 1;

export interface WhisperHparams {
  nVocab: number;
  nAudioCtx: number;
  nAudioState: number;
  nAudioHead: number;
  nAudioLayer: number;
  nTextCtx: number;
  nTextState: number;
  nTextHead: number;
  nTextLayer: number;
  nMels: number;
}

export interface GgmlTensorOut {
  name: string;
  /** numpy order (outermost first), as the checkpoint shapes are. */
  shape: number[];
  type: typeof GGML_F32 | typeof GGML_F16;
  data: Buffer;
}

export class WhisperConvertError extends Error {
  override readonly name = "WhisperConvertError";
}

function get(m: Ct2Model, name: string): Ct2Variable {
  const v = m.variables.get(name);
  if (!v) throw new WhisperConvertError(`model.bin has no ${name}; it is not a CTranslate2 Whisper checkpoint`);
  return v;
}

function layers(m: Ct2Model, side: "encoder" | "decoder"): number {
  let n = 0;
  while (m.variables.has(`${side}/layer_${n}/ffn/linear_0/weight`)) n++;
  return n;
}

export function whisperHparams(m: Ct2Model): WhisperHparams {
  if (m.spec !== "WhisperSpec") throw new WhisperConvertError(`model.bin holds a ${m.spec}, not a WhisperSpec`);
  const enc = get(m, "encoder/position_encodings/encodings").dims;
  const dec = get(m, "decoder/position_encodings/encodings").dims;
  const emb = get(m, "decoder/embeddings/weight").dims;
  const conv1 = get(m, "encoder/conv1/weight").dims;
  const heads = (side: string) => {
    const h = scalar(m.variables.get(`${side}/num_heads`));
    if (!h) throw new WhisperConvertError(`model.bin has no ${side}/num_heads`);
    return h;
  };
  return {
    nVocab: emb[0]!, nAudioCtx: enc[0]!, nAudioState: enc[1]!, nAudioHead: heads("encoder"), nAudioLayer: layers(m, "encoder"),
    nTextCtx: dec[0]!, nTextState: dec[1]!, nTextHead: heads("decoder"), nTextLayer: layers(m, "decoder"), nMels: conv1[1]!,
  };
}

/** Rows [from, to) of a 2-D variable, or elements [from, to) of a 1-D one, as float32 or float16 bytes. */
function convert(v: Ct2Variable, name: string, type: GgmlTensorOut["type"], rows?: [number, number]): Buffer {
  const rowLen = v.dims.length >= 2 ? v.dims.slice(1).reduce((a, b) => a * b, 1) : 1;
  const [from, to] = rows ?? [0, v.dims[0] ?? 1];
  const n = (to - from) * rowLen;
  const start = from * rowLen;
  if (v.dtype === Ct2Dtype.FLOAT16) {
    if (type === GGML_F16) return Buffer.from(v.data.subarray(start * 2, (start + n) * 2));
    const out = Buffer.alloc(n * 4);
    for (let i = 0; i < n; i++) out.writeFloatLE(halfToFloat(v.data.readUInt16LE((start + i) * 2)), i * 4);
    return out;
  }
  if (v.dtype === Ct2Dtype.FLOAT32) {
    if (type === GGML_F32) return Buffer.from(v.data.subarray(start * 4, (start + n) * 4));
    const out = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) out.writeUInt16LE(floatToHalf(v.data.readFloatLE((start + i) * 4)), i * 2);
    return out;
  }
  throw new WhisperConvertError(`${name} is ${dtypeName(v.dtype)}; svc converts float16 and float32 checkpoints ` +
    `(an int8-quantized CTranslate2 model cannot be converted back: use its float16 release)`);
}

export {floatToHalf};

/** Every tensor whisper.cpp expects, in its names and types. */
export function whisperTensors(m: Ct2Model, h: WhisperHparams): GgmlTensorOut[] {
  const out: GgmlTensorOut[] = [];
  const add = (name: string, src: string, type: GgmlTensorOut["type"], rows?: [number, number], shape?: number[]) => {
    const v = get(m, src);
    const s = shape ?? (rows ? [rows[1] - rows[0], ...v.dims.slice(1)] : v.dims);
    out.push({name, shape: s, type, data: convert(v, src, type, rows)});
  };
  const matrix = (name: string, src: string, rows?: [number, number]) => add(`${name}.weight`, `${src}/weight`, GGML_F16, rows);
  const vector = (name: string, src: string, rows?: [number, number]) => add(`${name}.bias`, `${src}/bias`, GGML_F32, rows);
  const linear = (name: string, src: string, rows?: [number, number], bias = true) => {
    matrix(name, src, rows);
    if (bias) vector(name, src, rows);
  };
  const norm = (name: string, src: string) => {
    add(`${name}.weight`, `${src}/gamma`, GGML_F32);
    add(`${name}.bias`, `${src}/beta`, GGML_F32);
  };
  const s = h.nAudioState;
  add("encoder.positional_embedding", "encoder/position_encodings/encodings", GGML_F32);
  matrix("encoder.conv1", "encoder/conv1");
  add("encoder.conv1.bias", "encoder/conv1/bias", GGML_F32, undefined, [s, 1]);
  matrix("encoder.conv2", "encoder/conv2");
  add("encoder.conv2.bias", "encoder/conv2/bias", GGML_F32, undefined, [s, 1]);
  for (let i = 0; i < h.nAudioLayer; i++) {
    const b = `encoder.blocks.${i}`;
    const l = `encoder/layer_${i}`;
    selfAttention(b, `${l}/self_attention`, s);
    norm(`${b}.mlp_ln`, `${l}/ffn/layer_norm`);
    linear(`${b}.mlp.0`, `${l}/ffn/linear_0`);
    linear(`${b}.mlp.2`, `${l}/ffn/linear_1`);
  }
  norm("encoder.ln_post", "encoder/layer_norm");
  const t = h.nTextState;
  add("decoder.positional_embedding", "decoder/position_encodings/encodings", GGML_F32);
  add("decoder.token_embedding.weight", "decoder/embeddings/weight", GGML_F16);
  for (let i = 0; i < h.nTextLayer; i++) {
    const b = `decoder.blocks.${i}`;
    const l = `decoder/layer_${i}`;
    selfAttention(b, `${l}/self_attention`, t);
    norm(`${b}.cross_attn_ln`, `${l}/attention/layer_norm`);
    linear(`${b}.cross_attn.query`, `${l}/attention/linear_0`);
    linear(`${b}.cross_attn.key`, `${l}/attention/linear_1`, [0, t], false);
    linear(`${b}.cross_attn.value`, `${l}/attention/linear_1`, [t, 2 * t]);
    linear(`${b}.cross_attn.out`, `${l}/attention/linear_2`);
    norm(`${b}.mlp_ln`, `${l}/ffn/layer_norm`);
    linear(`${b}.mlp.0`, `${l}/ffn/linear_0`);
    linear(`${b}.mlp.2`, `${l}/ffn/linear_1`);
  }
  norm("decoder.ln", "decoder/layer_norm");
  return out;

  function selfAttention(block: string, src: string, n: number): void {
    norm(`${block}.attn_ln`, `${src}/layer_norm`);
    linear(`${block}.attn.query`, `${src}/linear_0`, [0, n]);
    linear(`${block}.attn.key`, `${src}/linear_0`, [n, 2 * n], false);
    linear(`${block}.attn.value`, `${src}/linear_0`, [2 * n, 3 * n]);
    linear(`${block}.attn.out`, `${src}/linear_1`);
  }
}

/**
 * GPT-2's byte-to-character table: the tokenizer spells every byte as a printable character. Inverted, it
 * turns a vocabulary entry back into the bytes whisper.cpp writes out.
 */
function unicodeToByte(): Map<string, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map<string, number>();
  for (const b of printable) map.set(String.fromCodePoint(b), b);
  let extra = 0;
  for (let b = 0; b < 256; b++) if (!printable.includes(b)) map.set(String.fromCodePoint(256 + extra++), b);
  return map;
}

/**
 * The ordinary tokens of vocabulary.txt (one per line, byte-level spelling) up to the first special token:
 * whisper.cpp numbers the special tokens itself from the model's vocabulary size.
 */
export function whisperVocab(lines: string[]): Buffer[] {
  const table = unicodeToByte();
  const out: Buffer[] = [];
  for (const line of lines) {
    if (line === "<|endoftext|>") return out;
    const bytes: number[] = [];
    for (const ch of line) {
      const b = table.get(ch);
      if (b === undefined) throw new WhisperConvertError(`vocabulary.txt line ${out.length + 1} holds "${ch}", which is not a byte-level token character`);
      bytes.push(b);
    }
    out.push(Buffer.from(bytes));
  }
  throw new WhisperConvertError("vocabulary.txt has no <|endoftext|> token");
}

/** The whole file's parts in order; the caller writes them out (the tensors are ~150 MB for base). */
export function* ggmlWhisperParts(h: WhisperHparams, vocab: Buffer[], tensors: GgmlTensorOut[]): Generator<Buffer> {
  const head = Buffer.alloc(4 * 12);
  [GGML_MAGIC, h.nVocab, h.nAudioCtx, h.nAudioState, h.nAudioHead, h.nAudioLayer, h.nTextCtx, h.nTextState, h.nTextHead,
    h.nTextLayer, h.nMels, FTYPE_F16].forEach((v, i) => head.writeInt32LE(v, 4 * i));
  yield head;
  const bins = 1 + N_FFT / 2;
  const filters = melFilters(h.nMels);
  const fh = Buffer.alloc(8);
  fh.writeInt32LE(h.nMels, 0);
  fh.writeInt32LE(bins, 4);
  yield fh;
  yield Buffer.from(filters.buffer, filters.byteOffset, filters.byteLength);
  const count = Buffer.alloc(4);
  count.writeInt32LE(vocab.length, 0);
  yield count;
  for (const token of vocab) {
    const len = Buffer.alloc(4);
    len.writeUInt32LE(token.length, 0);
    yield len;
    yield token;
  }
  for (const t of tensors) {
    const name = Buffer.from(t.name, "utf8");
    const th = Buffer.alloc(12 + 4 * t.shape.length);
    th.writeInt32LE(t.shape.length, 0);
    th.writeInt32LE(name.length, 4);
    th.writeInt32LE(t.type, 8);
    [...t.shape].reverse().forEach((d, i) => th.writeInt32LE(d, 12 + 4 * i));
    yield th;
    yield name;
    yield t.data;
  }
}
