// The test projector: a multimodal projector GGUF ("mmproj", as llama.cpp's tools/mtmd loads it with
// `llama-server --mmproj`) that sits beside a small text model, so the vision tests send images through a real
// engine without real vision weights (none are in any registry here). Written by the project's own GGUF writer at
// first use into the test model's directory, and reused (the file name carries the recipe's version and the text
// width it projects to).
//
// Type: gemma3, the simplest image path mtmd has for a SigLIP tower: no tiling, no slices, no 2-D RoPE. The image is
// resized (bilinear) to one 224x224 tile, cut into 14-pixel patches (a 16x16 grid), run through the tower, average-
// pooled 4x4 (a 4x4 grid), RMS-normed and projected linearly: every image is 16 embeddings of the text model's width,
// framed in the prompt by the text "<start_of_image>" / "<end_of_image>" (tokenized by the text model's tokenizer).
//
// Shape: a SigLIP-style ViT of 2 layers at width 64 (2 heads of 32, FFN 128, GELU, LayerNorm with biases), a learned
// position embedding per patch and a post-norm; about 0.5 MB (0.6 MB beside SmolLM2's 576-wide embedding), all F32:
// the project's writer has no F16, its 32-value block types fit neither the patch convolution's 14-wide rows nor the
// projection (the graph transposes it and copies it element by element), and the file is small anyway.
// Weights are Gaussian from a fixed seed, scaled by 1/sqrt(fan-in) so activations stay near unit size through the
// tower: every pixel moves the image's embeddings, so another image moves the next token's distribution, and the
// same image gives the same reply at temperature 0.
//
// What the loader requires (tools/mtmd/clip.cpp, models/siglip.cpp of the bundled llama.cpp), and why some keys are
// here although the graph ignores them: projection_dim, image_mean and image_std are read as required keys;
// clip.vision.projector.scale_factor is optional for gemma3 (default 4) and written so the file states its pooling.
// The FFN must not be as wide as the tower: for gemma3 the loader swaps ffn_up and ffn_down when ffn_down's rows
// are the tower's width (a fix for old conversions), so FFN 128 keeps the names meaning what they say.
//
// With {audio: true} the file also holds an audio tower (support/test-projector-audio.ts: a Whisper-style encoder
// with the qwen2a projector, 750 embeddings per 30 s of sound), so one mmproj gives the text model both pictures and
// sounds; the vision tower is the same, byte for byte, and the file has its own name ("-av-").

import {mkdir, rename, rm} from "node:fs/promises";
import {existsSync} from "node:fs";
import {join} from "node:path";
import {deflateSync} from "node:zlib";
import {defaultModelsDir} from "../src/models/resolve.ts";
import {GgufType, gv, readGgufMetadata, writeGguf, type GgufMetadata, type GgufTensor} from "../src/models/gguf-writer.ts";
import {gaussian} from "./test-model.ts";
import {audioTowerMetadata, audioTowerTensors} from "./test-projector-audio.ts";

/** Bump when the recipe below changes, so cached files of an older recipe are not reused. */
const RECIPE_VERSION = 1;

export const TEST_PROJECTOR_SHAPE = {layers: 2, width: 64, heads: 2, ff: 128, imageSize: 224, patchSize: 14, pool: 4, eps: 1e-6} as const;

/** Embeddings per image: the patch grid's side, pooled, squared (224 / 14 / 4 = 4, so 16). */
export const TEST_PROJECTOR_IMAGE_TOKENS = (TEST_PROJECTOR_SHAPE.imageSize / TEST_PROJECTOR_SHAPE.patchSize / TEST_PROJECTOR_SHAPE.pool) ** 2;

export interface TestProjectorOptions {
  /** Where the models live (default: the server's models directory); the file goes into its test-model folder. */
  modelsDir?: string;
  /** Also an audio tower (qwen2a), in a file of its own name; default false (vision only). */
  audio?: boolean;
}

const built = new Map<string, Promise<string>>();

/**
 * The path of a test projector for the text model at `textModelPath`, written on first use (once per process and
 * text width; concurrent processes each write a temp file and rename). Its output width is the text model's
 * `<arch>.embedding_length`, which mtmd checks against the text model at load.
 */
export function testProjectorPath(textModelPath: string, opts: TestProjectorOptions = {}): Promise<string> {
  const dir = join(opts.modelsDir ?? defaultModelsDir(), "test-model");
  const audio = opts.audio ?? false;
  const key = `${dir}\0${textModelPath}\0${audio}`;
  let p = built.get(key);
  if (!p) {
    p = (async () => {
      const textWidth = await embeddingWidth(textModelPath);
      const path = join(dir, `svc-test-projector-${audio ? "av-" : ""}v${RECIPE_VERSION}-w${textWidth}.gguf`);
      if (existsSync(path)) return path;
      await mkdir(dir, {recursive: true});
      const tmp = `${path}.${process.pid}.tmp`;
      try {
        await writeTestProjector(tmp, textWidth, {audio});
        await rename(tmp, path);
      } finally {
        await rm(tmp, {force: true});
      }
      return path;
    })();
    built.set(key, p);
  }
  return p;
}

/** The text model's embedding width: what every image embedding must have to stand in for a token's. */
export async function embeddingWidth(textModelPath: string): Promise<number> {
  const {metadata} = await readGgufMetadata(textModelPath);
  const arch = metadata.get("general.architecture")?.value;
  if (typeof arch !== "string") throw new Error(`${textModelPath} has no general.architecture`);
  const width = metadata.get(`${arch}.embedding_length`)?.value;
  if (typeof width !== "number" && typeof width !== "bigint") throw new Error(`${textModelPath} has no ${arch}.embedding_length`);
  return Number(width);
}

/** `count` values of N(0, scale^2) from `next`. */
function normal(next: () => number, count: number, scale: number): Float32Array {
  const a = new Float32Array(count);
  for (let i = 0; i < count; i++) a[i] = next() * scale;
  return a;
}

const f32s = (values: number[]) => ({type: GgufType.ARRAY, itemType: GgufType.FLOAT32, value: values}) as const;

/**
 * Writes the test projector to `path`, projecting to `textWidth` (the text model's embedding width); with `audio`,
 * the audio tower too.
 */
export async function writeTestProjector(path: string, textWidth: number, opts: {audio?: boolean} = {}): Promise<void> {
  const {layers, width, heads, ff, imageSize, patchSize, pool, eps} = TEST_PROJECTOR_SHAPE;
  const patches = (imageSize / patchSize) ** 2;
  const next = gaussian(0xc11b);
  const ones = () => new Float32Array(width).fill(1);
  const zeros = (n: number) => new Float32Array(n);
  const patchIn = patchSize * patchSize * 3;
  // ggml order throughout: ne0 (the contiguous axis) first, so a matrix is [inputs, outputs].
  const tensors: GgufTensor[] = [
    // A conv kernel [kw, kh, channels in, channels out]: one 14x14x3 filter per tower dimension.
    {name: "v.patch_embd.weight", dims: [patchSize, patchSize, 3, width], data: normal(next, patchIn * width, 1 / Math.sqrt(patchIn))},
    {name: "v.patch_embd.bias", dims: [width], data: zeros(width)},
    // Added to each patch's embedding, so the tower knows where in the grid a patch was.
    {name: "v.position_embd.weight", dims: [width, patches], data: normal(next, width * patches, 0.5)},
  ];
  const s = 1 / Math.sqrt(width);
  for (let l = 0; l < layers; l++) {
    const blk = `v.blk.${l}`;
    tensors.push(
      {name: `${blk}.ln1.weight`, dims: [width], data: ones()},
      {name: `${blk}.ln1.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_q.weight`, dims: [width, width], data: normal(next, width * width, s)},
      {name: `${blk}.attn_q.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_k.weight`, dims: [width, width], data: normal(next, width * width, s)},
      {name: `${blk}.attn_k.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_v.weight`, dims: [width, width], data: normal(next, width * width, s)},
      {name: `${blk}.attn_v.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_out.weight`, dims: [width, width], data: normal(next, width * width, s)},
      {name: `${blk}.attn_out.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.ln2.weight`, dims: [width], data: ones()},
      {name: `${blk}.ln2.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.ffn_up.weight`, dims: [width, ff], data: normal(next, width * ff, s)},
      {name: `${blk}.ffn_up.bias`, dims: [ff], data: zeros(ff)},
      {name: `${blk}.ffn_down.weight`, dims: [ff, width], data: normal(next, ff * width, 1 / Math.sqrt(ff))},
      {name: `${blk}.ffn_down.bias`, dims: [width], data: zeros(width)},
    );
  }
  tensors.push(
    {name: "v.post_ln.weight", dims: [width], data: ones()},
    {name: "v.post_ln.bias", dims: [width], data: zeros(width)},
    // The multiplier after the pooled RMS norm (Gemma's "1 + w" already folded in, as the converter writes it).
    {name: "mm.soft_emb_norm.weight", dims: [width], data: ones()},
    // Stored [text width, tower width]: the graph transposes it before the matmul, and mtmd reads the output width
    // (checked against the text model's) from its ne0.
    {name: "mm.input_projection.weight", dims: [textWidth, width], data: normal(next, textWidth * width, s)},
  );
  const metadata: GgufMetadata = new Map([
    ["general.architecture", gv.str("clip")],
    ["general.name", gv.str(`svc test projector${opts.audio ? " (vision and audio)" : ""} v${RECIPE_VERSION}`)],
    ["general.file_type", gv.u32(0)], // all F32
    // The shared key would name the audio tower's type too; a file with both towers names each tower's.
    [opts.audio ? "clip.vision.projector_type" : "clip.projector_type", gv.str("gemma3")],
    ["clip.has_vision_encoder", gv.bool(true)],
    ["clip.use_gelu", gv.bool(true)], // SigLIP's activation; without the key mtmd would use quick GELU
    ["clip.vision.image_size", gv.u32(imageSize)],
    ["clip.vision.patch_size", gv.u32(patchSize)],
    ["clip.vision.embedding_length", gv.u32(width)],
    ["clip.vision.feed_forward_length", gv.u32(ff)],
    ["clip.vision.block_count", gv.u32(layers)],
    ["clip.vision.projection_dim", gv.u32(textWidth)],
    ["clip.vision.attention.head_count", gv.u32(heads)],
    ["clip.vision.attention.layer_norm_epsilon", gv.f32(eps)],
    ["clip.vision.image_mean", f32s([0.5, 0.5, 0.5])],
    ["clip.vision.image_std", f32s([0.5, 0.5, 0.5])],
    ["clip.vision.projector.scale_factor", gv.u32(pool)],
  ]);
  if (opts.audio) {
    for (const [key, value] of audioTowerMetadata(textWidth)) metadata.set(key, value);
    tensors.push(...audioTowerTensors(textWidth));
  }
  await writeGguf(path, metadata, tensors);
}

const CRC_TABLE = Array.from({length: 256}, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

/**
 * A PNG (8-bit RGB, no interlace) of `width` x `height` pixels whose colour at (x, y) is `pixel(x, y)`: images for
 * the vision tests, encoded here because the project has no image library (and needs none beyond this).
 */
export function testPng(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1); // each row starts with its filter type, 0 (none)
    for (let x = 0; x < width; x++) raw.set(pixel(x, y), row + 1 + x * 3);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // bit depth 8, colour type 2 (RGB), deflate, adaptive filters, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk("IHDR", header),
    pngChunk("IDAT", deflateSync(raw)), pngChunk("IEND", new Uint8Array(0))]);
}
