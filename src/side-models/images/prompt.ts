// The image model's prompt. stable-diffusion.cpp writes it into FLUX.2 klein's chat template itself
// ("<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", conditioner.hpp) and
// pads it to 512 tokens, but does not cut a longer one; the spec cuts the templated prompt at 512 tokens, as FLUX.2's
// own pipeline does. So svc counts the prompt with Qwen3's tokenizer (Qwen2's vocabulary: models/bundled-vocab.ts) and
// keeps the tokens that fit beside the template's.
//
// stable-diffusion.cpp also reads "(word:1.3)" and "[word]" in a prompt as attention weights (the A1111 syntax). An
// OpenAI-style prompt is plain text, so those characters are escaped and reach the model as written.

import {bundledVocab} from "../../models/bundled-vocab.ts";
import {QwenTokenizer} from "./qwen-tokenizer.ts";

/** The templated prompt's bound. */
export const PROMPT_TOKENS = 512;
/**
 * The template's own tokens in Qwen3's vocabulary: <|im_start|> user \n before the prompt; <|im_end|> \n <|im_start|>
 * assistant \n <think> \n\n </think> \n\n after it.
 */
export const TEMPLATE_TOKENS = 12;

export interface ImagePrompt {
  /** The prompt as the engine gets it: cut to fit, attention syntax escaped. */
  text: string;
  /** Tokens of the templated prompt (the `usage` input). */
  tokens: number;
  /** Whether the prompt was cut. */
  cut: boolean;
}

export function escapeAttention(text: string): string {
  return text.replace(/[\\()[\]]/g, "\\$&");
}

export class ImagePromptWriter {
  private constructor(private readonly vocab: QwenTokenizer) {}

  static async load(modelsDir: string): Promise<ImagePromptWriter> {
    return new ImagePromptWriter(await QwenTokenizer.load(await bundledVocab("ggml-vocab-qwen2.gguf", modelsDir)));
  }

  write(prompt: string): ImagePrompt {
    // Plain text: a "<|im_end|>" typed in a prompt is counted as the characters it is.
    const tokens = this.vocab.tokenize(prompt);
    const room = PROMPT_TOKENS - TEMPLATE_TOKENS;
    if (tokens.length <= room) return {text: escapeAttention(prompt), tokens: tokens.length + TEMPLATE_TOKENS, cut: false};
    return {text: escapeAttention(this.vocab.detokenize(tokens.slice(0, room))), tokens: PROMPT_TOKENS, cut: true};
  }
}
