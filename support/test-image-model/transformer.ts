// The diffusion transformer: FLUX.2 klein's tensors under Black Forest Labs' names, as in their
// flux-2-klein-4b.safetensors (no "model.diffusion_model." prefix: sd.cpp adds it to what it loads as the diffusion
// model, and ComfyUI's copies carry it already). BFL's 4B file holds 5 double and 20 single blocks at width 3,072
// (24 heads of 128) over a 7,680-wide text context (three taps of Qwen3-4B's 2,560); this one holds 1 + 1 at
// width 128.
//
// What stable-diffusion.cpp reads from the names and shapes (model_loader.cpp get_sd_version, flux.hpp
// FluxConfig::detect_from_weights):
// - double_stream_modulation_img.lin.weight marks FLUX.2, and no single_blocks.47.linear1.weight marks klein
//   (FLUX.2 dev has 48 single blocks);
// - the block counts come from the highest double_blocks.N / single_blocks.N;
// - txt_in.weight gives the text context width (its input) and the model width (its output);
// - the head size comes from the attention's key_norm scale, and heads = width / head size. The RoPE axes are
//   fixed at 4 x 32 = 128, so the head size must be 128: one head at width 128 is the smallest model;
// - FLUX.2 has no biases anywhere, a 3x SwiGLU MLP (its first matrix holds gate and up), modulation shared by all
//   blocks of a kind, and no guidance embedding in klein (guidance_in.* would turn it on).

import {WeightMaker} from "./weights.ts";
import type {TensorSpec} from "./safetensors.ts";

export interface TransformerShape {
  width: number;
  doubleBlocks: number;
  singleBlocks: number;
  /** The text encoder's output width (txt_in's input). */
  contextWidth: number;
}

/** Fixed by FLUX.2 in sd.cpp: the RoPE axes (4 x 32), the MLP ratio, the patchified latent's channels (32 x 2 x 2). */
export const FLUX2 = {headSize: 128, mlpRatio: 3, latentChannels: 128, timeEmbedding: 256} as const;

/**
 * Gains over the unit scale (a matrix's outputs about this size for unit inputs; a QK-norm scale multiplies each
 * attention logit by its square), measured in the engine. At unit gains another prompt moved a 256x256 picture's
 * pixels by 1/255 on average: attention spread over 512 mostly-padding text tokens gives every image position
 * nearly the same text vector, a uniform latent shift the VAE decoder's group norms remove. Sharp attention (each
 * position picks its own text tokens), strong projections and strong modulation make it about 30/255, against
 * about 50/255 for another seed.
 */
const GAIN = {qkNorm: 4, textIn: 4, modulation: 3, attentionOut: 3, output: 3} as const;

/** The transformer's tensors: matrices at 1/sqrt(inputs) times a gain (GAIN, else 1), norm scales at GAIN.qkNorm. */
export function transformerTensors(shape: TransformerShape, seed: number): TensorSpec[] {
  const {width, doubleBlocks, singleBlocks, contextWidth} = shape;
  const mlp = width * FLUX2.mlpRatio;
  const w = new WeightMaker(seed, "BF16"); // BFL ships klein in bf16
  const norm = (name: string) => w.constant(name, [FLUX2.headSize], GAIN.qkNorm);
  const tensors: TensorSpec[] = [
    w.linear("img_in.weight", width, FLUX2.latentChannels),
    w.linear("txt_in.weight", width, contextWidth, GAIN.textIn),
    w.linear("time_in.in_layer.weight", width, FLUX2.timeEmbedding),
    w.linear("time_in.out_layer.weight", width, width),
    // Shift, scale and gate for attention and MLP (6 per stream) from the timestep vector, shared by every block.
    w.linear("double_stream_modulation_img.lin.weight", 6 * width, width, GAIN.modulation),
    w.linear("double_stream_modulation_txt.lin.weight", 6 * width, width, GAIN.modulation),
    w.linear("single_stream_modulation.lin.weight", 3 * width, width, GAIN.modulation),
  ];
  for (let i = 0; i < doubleBlocks; i++) {
    for (const stream of ["img", "txt"]) {
      const p = `double_blocks.${i}.${stream}`;
      tensors.push(
        w.linear(`${p}_attn.qkv.weight`, 3 * width, width),
        norm(`${p}_attn.norm.query_norm.scale`),
        norm(`${p}_attn.norm.key_norm.scale`),
        w.linear(`${p}_attn.proj.weight`, width, width, GAIN.attentionOut),
        w.linear(`${p}_mlp.0.weight`, 2 * mlp, width),
        w.linear(`${p}_mlp.2.weight`, width, mlp),
      );
    }
  }
  for (let i = 0; i < singleBlocks; i++) {
    const p = `single_blocks.${i}`;
    tensors.push(
      // q, k, v and the MLP's gate and up in one matrix; attention output and MLP output back through one.
      w.linear(`${p}.linear1.weight`, 3 * width + 2 * mlp, width),
      w.linear(`${p}.linear2.weight`, width, width + mlp, GAIN.attentionOut),
      norm(`${p}.norm.query_norm.scale`),
      norm(`${p}.norm.key_norm.scale`),
    );
  }
  tensors.push(
    w.linear("final_layer.adaLN_modulation.1.weight", 2 * width, width, GAIN.modulation),
    w.linear("final_layer.linear.weight", FLUX2.latentChannels, width, GAIN.output),
  );
  return tensors;
}
