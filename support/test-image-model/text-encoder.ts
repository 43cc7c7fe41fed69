// The text encoder: Qwen3's tensors under Hugging Face's names, as in Qwen3-4B's model.safetensors and
// Comfy-Org's qwen_3_4b.safetensors (model.embed_tokens, model.layers.N.self_attn.q_proj, ..., model.norm; no
// lm_head, which Qwen3-4B ties to the embedding and sd.cpp never reads). A GGUF of the same model (token_embd,
// blk.N.attn_q, ...) is renamed to these names by sd.cpp's loader.
//
// What stable-diffusion.cpp reads from the weights (llm.hpp LLMConfig::detect_from_weights, arch QWEN3 for
// FLUX.2 klein): the layer count (the highest layers.N), the width and vocabulary size (embed_tokens), the MLP
// width (gate_proj). Heads are fixed at 32 of 128 with 8 key/value heads (28 layers would switch to 16 heads), so
// q_proj is 4,096 wide whatever the model's width. The engine tokenizes with its built-in Qwen2 tokenizer, whose
// chat tokens sit at ids 151,643 and up: the embedding keeps all 151,936 rows.
//
// What comes out (conditioner.hpp, FLUX.2 klein): the prompt padded to 512 tokens, and the hidden states after
// layers 9, 18 and 27 side by side (Qwen3-4B: 3 x 2,560 = 7,680). A model of fewer than 9 layers has none of
// those; sd.cpp then returns the final norm's output, one width wide. So one layer is enough, and the
// transformer's text context is the encoder's width (textContextWidth).

import {WeightMaker} from "./weights.ts";
import type {TensorSpec} from "./safetensors.ts";

export interface TextEncoderShape {
  layers: number;
  width: number;
  ff: number;
}

/** Fixed by sd.cpp for Qwen3 (heads) and by its tokenizer (vocabulary, Qwen3-4B's embedding rows). */
export const QWEN3 = {heads: 32, kvHeads: 8, headSize: 128, vocab: 151_936} as const;

/** The layers whose outputs FLUX.2 klein takes, counted from 1 (conditioner.hpp: out_layers = {9, 18, 27}). */
const KLEIN_TAPS = [9, 18, 27];

/** The width of what the encoder hands the transformer: each tapped layer's width, or the final norm's if none. */
export function textContextWidth(shape: TextEncoderShape): number {
  const taps = KLEIN_TAPS.filter((l) => l <= shape.layers).length;
  return shape.width * Math.max(taps, 1);
}

/**
 * Gains over the unit scale, measured in the engine with the transformer's: the prompt is padded to 512 tokens,
 * and the padding's hidden states differ between prompts only through attention to the prompt's tokens. A sharper
 * query norm and a strong attention output make those states mostly attention, so another prompt changes the whole
 * 512-token context, not a handful of tokens.
 */
const GAIN = {queryNorm: 4, attentionOut: 8} as const;

/** The encoder's tensors: matrices at 1/sqrt(inputs) times a gain (GAIN, else 1), norm scales at 1 (the query's at GAIN). */
export function textEncoderTensors(shape: TextEncoderShape, seed: number): TensorSpec[] {
  const {layers, width, ff} = shape;
  const {heads, kvHeads, headSize, vocab} = QWEN3;
  const w = new WeightMaker(seed, "BF16"); // Qwen3-4B ships in bf16
  const ones = (name: string, n: number) => w.constant(name, [n], 1);
  // Embeddings of unit spread: each token's row is its own direction, so another prompt is another context.
  const tensors: TensorSpec[] = [w.random("model.embed_tokens.weight", [vocab, width], 1)];
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    tensors.push(
      ones(`${p}.input_layernorm.weight`, width),
      w.linear(`${p}.self_attn.q_proj.weight`, heads * headSize, width),
      w.linear(`${p}.self_attn.k_proj.weight`, kvHeads * headSize, width),
      w.linear(`${p}.self_attn.v_proj.weight`, kvHeads * headSize, width),
      w.constant(`${p}.self_attn.q_norm.weight`, [headSize], GAIN.queryNorm),
      ones(`${p}.self_attn.k_norm.weight`, headSize),
      w.linear(`${p}.self_attn.o_proj.weight`, width, heads * headSize, GAIN.attentionOut),
      ones(`${p}.post_attention_layernorm.weight`, width),
      w.linear(`${p}.mlp.gate_proj.weight`, ff, width),
      w.linear(`${p}.mlp.up_proj.weight`, ff, width),
      w.linear(`${p}.mlp.down_proj.weight`, width, ff),
    );
  }
  tensors.push(ones("model.norm.weight", width));
  return tensors;
}
