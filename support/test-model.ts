// The test model: the default model's architecture (llama), its real tokenizer and chat template, at a tiny size
// with deterministic weights, so the end-to-end tests that check the wire, the cache, sessions, budgets and
// exactness run about twenty times faster than on SmolLM2-135M. Written by the project's own GGUF writer at first
// use into the models directory, and reused (the file name carries the recipe's version).
//
// Shape: 2 layers of width 128, two heads of 64 sharing one KV head (SmolLM2's head size, grouped as SmolLM2's are),
// an FFN of 384, SmolLM2's RoPE base and 8,192-token training context; matrices in Q4_1 and the embedding and
// output in Q8_0, the types the default model ships, so the same ggml kernels (and the row-class behaviour the
// exactness probe measures) run. Weights are Gaussian from a fixed seed: attention and the FFN are real, so every
// token of the context moves the next token's logits, and a cache that reuses the wrong KV changes the reply.
//
// What the model writes: greedy decoding of random weights would pick control tokens, stray bytes and partial
// UTF-8 as often as words, and might end a reply at any step. A "bias dimension" steers it instead: dimension 0
// of every token embedding is a constant, the attention and FFN never write to it and never read it, so after the
// final norm it is a near-constant input to every logit, and each output row's weight on it sets its token's
// class bias. Words (letters, with or without a leading space) and digits compete on their random logits; JSON
// punctuation gets a lift, so a string or number under a schema closes within a few tokens as a trained model's
// would; every other token, the end-of-turn and end-of-text tokens included, is pushed far down. So free text is
// a context-dependent run of words that never ends on its own (a reply runs to its budget or a stop string), and
// under a grammar the model still writes short, valid JSON, which ends when the value closes.
//
// The test embedding model (testEmbeddingModelPath) is the same recipe at width 768, for the multimodal embedding
// side model's tests: its pooled hidden states are 768 wide, as the real model's are, and the test projector (with
// its audio tower) projects pictures and sounds to that width.

import {mkdir, rename, rm} from "node:fs/promises";
import {existsSync} from "node:fs";
import {join} from "node:path";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {defaultModelsDir, resolveModel} from "../src/models/resolve.ts";
import {GgufType, gv, readGgufMetadata, writeGguf, type GgufMetadata, type GgufTensor} from "../src/models/gguf-writer.ts";
import {GGML_TYPE} from "../src/models/gguf-quantize.ts";
import {createLogger} from "../src/observability/log.ts";

/** Bump when the recipe below changes, so cached files of an older recipe are not reused. */
const RECIPE_VERSION = 1;

/** A test model's shape: every width must be a multiple of 32 (the Q4_1 and Q8_0 blocks), heads * headSize any width. */
export interface TestModelShape {
  layers: number;
  width: number;
  heads: number;
  kvHeads: number;
  headSize: number;
  ff: number;
  contextLength: number;
  ropeBase: number;
}

export const TEST_MODEL_SHAPE = {layers: 2, width: 128, heads: 2, kvHeads: 1, headSize: 64, ff: 384, contextLength: 8192, ropeBase: 100_000} as const;

/**
 * The test embedding model's shape: the same recipe at width 768 (the multimodal embedding side model's width), twelve
 * heads of 64 sharing four KV heads, an FFN of 1,024, still two layers. About 85 MB, most of it the two 49,152-row
 * token matrices in Q8_0.
 */
export const TEST_EMBEDDING_MODEL_SHAPE = {layers: 2, width: 768, heads: 12, kvHeads: 4, headSize: 64, ff: 1024, contextLength: 8192, ropeBase: 100_000} as const;

/** The bias dimension's value in every embedding, and each token class's output weight on it (see the top of the file). */
const BIAS_INPUT = 4.25;
const CLASS_BIAS = {word: 0, punctuation: 0.8, other: -6} as const;
type TokenClass = keyof typeof CLASS_BIAS;

const WORD = /^Ġ?([A-Za-z]{2,}|[0-9])$/;
const PUNCTUATION = /^Ġ?["{}[\],:.]+$/;
const TOKEN_TYPE_NORMAL = 1;

/** The class of a token, from its byte-level text ("Ġ" is a leading space) and GGUF token type. */
export function tokenClass(text: string, type: number): TokenClass {
  if (type !== TOKEN_TYPE_NORMAL) return "other";
  if (WORD.test(text)) return "word";
  if (PUNCTUATION.test(text)) return "punctuation";
  return "other";
}

const built = new Map<string, Promise<string>>();

/** The test model's path, written on first use (once per process; concurrent processes each write a temp file and rename). */
export function testModelPath(modelsDir = defaultModelsDir()): Promise<string> {
  return cachedModel(modelsDir, `svc-test-model-v${RECIPE_VERSION}.gguf`, TEST_MODEL_SHAPE, `svc test model v${RECIPE_VERSION}`);
}

/**
 * The test embedding model's path (TEST_EMBEDDING_MODEL_SHAPE: the test model's recipe, tokenizer and template at
 * width 768), written on first use beside the test model; the file name carries the recipe's version and the width.
 */
export function testEmbeddingModelPath(modelsDir = defaultModelsDir()): Promise<string> {
  const {width} = TEST_EMBEDDING_MODEL_SHAPE;
  return cachedModel(modelsDir, `svc-test-embedding-model-v${RECIPE_VERSION}-w${width}.gguf`, TEST_EMBEDDING_MODEL_SHAPE,
    `svc test embedding model v${RECIPE_VERSION} w${width}`);
}

function cachedModel(modelsDir: string, file: string, shape: TestModelShape, name: string): Promise<string> {
  const dir = join(modelsDir, "test-model");
  const path = join(dir, file);
  let p = built.get(path);
  if (!p) {
    p = (async () => {
      if (existsSync(path)) return path;
      await mkdir(dir, {recursive: true});
      const source = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir, logger: createLogger("warn"), progress: "lines"});
      const tmp = `${path}.${process.pid}.tmp`;
      try {
        await writeTestModel(tmp, source.path, shape, name);
        await rename(tmp, path);
      } finally {
        await rm(tmp, {force: true});
      }
      return path;
    })();
    built.set(path, p);
  }
  return p;
}

/** A seeded Gaussian source (mulberry32 and Box-Muller): the same weights on every machine (the test projector uses it too). */
export function gaussian(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/**
 * A [inputs, outputs] matrix (ggml order: a row per output) of N(0, scale^2) weights that neither reads nor writes
 * the bias dimension on a side that is the residual stream (`sides`).
 */
function matrix(next: () => number, inputs: number, outputs: number, scale: number,
  sides: {inputIsResidual: boolean; outputIsResidual: boolean}): Float32Array {
  const m = new Float32Array(inputs * outputs);
  for (let r = 0; r < outputs; r++) {
    for (let c = 0; c < inputs; c++) {
      const touchesBias = (sides.outputIsResidual && r === 0) || (sides.inputIsResidual && c === 0);
      m[r * inputs + c] = touchesBias ? 0 : next() * scale;
    }
  }
  return m;
}

/**
 * Writes a test model of `shape` (default: the test model's) to `path`, with the tokenizer and chat template of the
 * GGUF at `sourcePath`; `name` is its general.name.
 */
export async function writeTestModel(path: string, sourcePath: string, shape: TestModelShape = TEST_MODEL_SHAPE,
  name = `svc test model v${RECIPE_VERSION}`): Promise<void> {
  const {metadata: source} = await readGgufMetadata(sourcePath);
  const copied: GgufMetadata = new Map();
  for (const [key, value] of source) if (key.startsWith("tokenizer.")) copied.set(key, value);
  const tokens = copied.get("tokenizer.ggml.tokens")?.value as string[] | undefined;
  const types = copied.get("tokenizer.ggml.token_type")?.value as number[] | undefined;
  if (!tokens || !types || !copied.has("tokenizer.chat_template")) throw new Error(`${sourcePath} has no tokenizer or chat template to copy`);
  const {layers, width, heads, kvHeads, headSize, ff} = shape;
  const vocab = tokens.length;
  const next = gaussian(0x5eed);

  const embd = new Float32Array(vocab * width);
  const output = new Float32Array(vocab * width);
  for (let t = 0; t < vocab; t++) {
    embd[t * width] = BIAS_INPUT;
    output[t * width] = CLASS_BIAS[tokenClass(tokens[t]!, types[t]!)];
    for (let d = 1; d < width; d++) {
      embd[t * width + d] = next();
      output[t * width + d] = next() * 0.3;
    }
  }
  const ones = new Float32Array(width).fill(1);
  const residualIn = {inputIsResidual: true, outputIsResidual: false};
  const residualOut = {inputIsResidual: false, outputIsResidual: true};
  const q4 = GGML_TYPE.Q4_1;
  const tensors: GgufTensor[] = [
    {name: "token_embd.weight", dims: [width, vocab], data: embd, type: GGML_TYPE.Q8_0},
    {name: "output_norm.weight", dims: [width], data: ones},
    {name: "output.weight", dims: [width, vocab], data: output, type: GGML_TYPE.Q8_0},
  ];
  for (let l = 0; l < layers; l++) {
    const s = 1 / Math.sqrt(width);
    tensors.push(
      {name: `blk.${l}.attn_norm.weight`, dims: [width], data: ones},
      {name: `blk.${l}.attn_q.weight`, dims: [width, heads * headSize], data: matrix(next, width, heads * headSize, 1.5 * s, residualIn), type: q4},
      {name: `blk.${l}.attn_k.weight`, dims: [width, kvHeads * headSize], data: matrix(next, width, kvHeads * headSize, 1.5 * s, residualIn), type: q4},
      {name: `blk.${l}.attn_v.weight`, dims: [width, kvHeads * headSize], data: matrix(next, width, kvHeads * headSize, s, residualIn), type: q4},
      {name: `blk.${l}.attn_output.weight`, dims: [heads * headSize, width], data: matrix(next, heads * headSize, width, s, residualOut), type: q4},
      {name: `blk.${l}.ffn_norm.weight`, dims: [width], data: ones},
      {name: `blk.${l}.ffn_gate.weight`, dims: [width, ff], data: matrix(next, width, ff, s, residualIn), type: q4},
      {name: `blk.${l}.ffn_up.weight`, dims: [width, ff], data: matrix(next, width, ff, s, residualIn), type: q4},
      {name: `blk.${l}.ffn_down.weight`, dims: [ff, width], data: matrix(next, ff, width, 1 / Math.sqrt(ff), residualOut), type: q4},
    );
  }
  const metadata: GgufMetadata = new Map([
    ["general.architecture", gv.str("llama")],
    ["general.name", gv.str(name)],
    ["general.file_type", gv.u32(3)], // mostly Q4_1, as the default model
    ["llama.context_length", gv.u32(shape.contextLength)],
    ["llama.embedding_length", gv.u32(width)],
    ["llama.block_count", gv.u32(layers)],
    ["llama.feed_forward_length", gv.u32(ff)],
    ["llama.attention.head_count", gv.u32(heads)],
    ["llama.attention.head_count_kv", gv.u32(kvHeads)],
    ["llama.rope.dimension_count", gv.u32(headSize)],
    ["llama.rope.freq_base", gv.f32(shape.ropeBase)],
    ["llama.attention.layer_norm_rms_epsilon", gv.f32(1e-5)],
    ["llama.vocab_size", {type: GgufType.UINT32, value: vocab}],
    ...copied,
  ]);
  await writeGguf(path, metadata, tensors);
}
