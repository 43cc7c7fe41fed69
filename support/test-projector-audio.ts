// The test projector's audio tower (support/test-projector.ts writes it into the same GGUF as the vision tower when
// asked for audio): a Whisper-style encoder of log-mel input, as llama.cpp's tools/mtmd runs it for the qwen2a
// projector type (Qwen2-Audio), the simplest audio path mtmd has: no frame stacking, no extra norms, one linear
// projection with a bias.
//
// What mtmd does with a sound (tools/mtmd/mtmd-audio.cpp, models/whisper-enc.cpp, clip.cpp of the bundled llama.cpp):
// decodes the file (WAV, MP3, FLAC; any rate and channel count, resampled to 16 kHz mono), computes a Whisper log-mel
// spectrogram (400-point FFT, 10 ms hop) over the sound followed by 30 s of silence, and cuts it into 30 s chunks of
// 3,000 frames, dropping the last, incomplete one. Each chunk runs through the tower: a conv1d (kernel 3) from the mel
// bins to the tower's width and GELU, a conv1d of stride 2 and GELU (1,500 positions), a learned position embedding,
// the transformer layers (pre-norm LayerNorm with biases, no bias on K, GELU), average pooling by 2 (750 positions),
// the post-norm, and the projection to the text model's width: 750 embeddings per 30 s chunk, framed in the prompt by
// the text "<|audio_bos|>" / "<|audio_eos|>" (tokenized by the text model's tokenizer).
//
// Shape: 80 mel bins (Whisper's v1-v2 count; mtmd builds the filterbank for whatever count the file states), 2 layers
// of width 64 (2 heads of 32, FFN 128), 1,500 positions; about 0.6 MB, all F32. Weights are Gaussian from their own
// fixed seed (so the vision tower's weights are the same as in the vision-only file), scaled by 1/sqrt(fan-in): every
// mel frame moves the sound's embeddings.
//
// What the loader requires: clip.has_audio_encoder, the clip.audio.* hyperparameters (projection_dim is read as
// required, num_mel_bins must be 1-256), clip.audio.projector_type (the shared clip.projector_type key would override
// it for both towers, so a file with both states clip.vision.projector_type instead), and the tensors under "a." and
// "mm.a.fc"; the mmproj's output width (mm.a.fc's rows) must equal the vision tower's and the text model's.

import {gv, type GgufMetadata, type GgufTensor} from "../src/models/gguf-writer.ts";
import {gaussian} from "./test-model.ts";

export const TEST_AUDIO_TOWER_SHAPE = {layers: 2, width: 64, heads: 2, ff: 128, melBins: 80, positions: 1500, eps: 1e-5} as const;

/** The audio projector type: Qwen2-Audio's (a Whisper encoder, average pooling by 2, one linear projection). */
export const TEST_AUDIO_PROJECTOR_TYPE = "qwen2a";

/** Embeddings per 30 s chunk of sound: 3,000 mel frames, halved by the strided conv and again by the pooling. */
export const TEST_PROJECTOR_AUDIO_CHUNK_TOKENS = 3000 / 2 / 2;

/** `count` values of N(0, scale^2) from `next`. */
function normal(next: () => number, count: number, scale: number): Float32Array {
  const a = new Float32Array(count);
  for (let i = 0; i < count; i++) a[i] = next() * scale;
  return a;
}

/** The audio tower's tensors, projecting to `textWidth`. */
export function audioTowerTensors(textWidth: number): GgufTensor[] {
  const {layers, width, ff, melBins, positions} = TEST_AUDIO_TOWER_SHAPE;
  const next = gaussian(0xa0d10);
  const ones = () => new Float32Array(width).fill(1);
  const zeros = (n: number) => new Float32Array(n);
  const s = 1 / Math.sqrt(width);
  // ggml order throughout: ne0 (the contiguous axis) first, so a matrix is [inputs, outputs] and a conv1d kernel
  // [kernel width, channels in, channels out]; a conv1d's output is [positions, channels], so its bias is [1, channels]
  // (a [channels] bias fails ggml_add's broadcast check while the loader warms the graph up).
  const tensors: GgufTensor[] = [
    {name: "a.conv1d.1.weight", dims: [3, melBins, width], data: normal(next, 3 * melBins * width, 1 / Math.sqrt(3 * melBins))},
    {name: "a.conv1d.1.bias", dims: [1, width], data: zeros(width)},
    {name: "a.conv1d.2.weight", dims: [3, width, width], data: normal(next, 3 * width * width, 1 / Math.sqrt(3 * width))},
    {name: "a.conv1d.2.bias", dims: [1, width], data: zeros(width)},
    {name: "a.position_embd.weight", dims: [width, positions], data: normal(next, width * positions, 0.5)},
  ];
  for (let l = 0; l < layers; l++) {
    const blk = `a.blk.${l}`;
    tensors.push(
      {name: `${blk}.ln1.weight`, dims: [width], data: ones()},
      {name: `${blk}.ln1.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_q.weight`, dims: [width, width], data: normal(next, width * width, s)},
      {name: `${blk}.attn_q.bias`, dims: [width], data: zeros(width)},
      {name: `${blk}.attn_k.weight`, dims: [width, width], data: normal(next, width * width, s)}, // Whisper's K has no bias
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
    {name: "a.post_ln.weight", dims: [width], data: ones()},
    {name: "a.post_ln.bias", dims: [width], data: zeros(width)},
    {name: "mm.a.fc.weight", dims: [width, textWidth], data: normal(next, width * textWidth, s)},
    {name: "mm.a.fc.bias", dims: [textWidth], data: zeros(textWidth)},
  );
  return tensors;
}

/** The audio tower's metadata keys (clip.has_audio_encoder and clip.audio.*), projecting to `textWidth`. */
export function audioTowerMetadata(textWidth: number): GgufMetadata {
  const {layers, width, heads, ff, melBins, eps} = TEST_AUDIO_TOWER_SHAPE;
  return new Map([
    ["clip.has_audio_encoder", gv.bool(true)],
    ["clip.audio.projector_type", gv.str(TEST_AUDIO_PROJECTOR_TYPE)],
    ["clip.audio.num_mel_bins", gv.u32(melBins)],
    ["clip.audio.embedding_length", gv.u32(width)],
    ["clip.audio.feed_forward_length", gv.u32(ff)],
    ["clip.audio.block_count", gv.u32(layers)],
    ["clip.audio.projection_dim", gv.u32(textWidth)],
    ["clip.audio.attention.head_count", gv.u32(heads)],
    ["clip.audio.attention.layer_norm_epsilon", gv.f32(eps)],
  ]);
}
