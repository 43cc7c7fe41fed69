// The spec's limits for small generation and the sampling it uses when a request sets none. Kept apart
// from the runner so the edges can be checked without a model.

import {ApiError} from "../../core/errors.ts";

export const SMALL_GENERATION_LIMITS = {
  /** Longest prompt, template included. */
  promptTokens: 16_384,
  /** Prompt plus answer: the context the model is given (clamped to the model's training context). */
  positions: 18_432,
  /** max_tokens when the request sets none. */
  defaultMaxTokens: 2_048,
} as const;

/** The spec's defaults; a request's own value for any of them wins. */
export const SMALL_GENERATION_SAMPLING = {temperature: 1.0, topK: 20, presencePenalty: 2.0} as const;

/**
 * Refuses a prompt the small model cannot take: over the spec's 16,384 tokens, or one that leaves no room
 * to answer in the context it really has (`contextSize`, which is the model's training context when that
 * is below 18,432 positions). Checked before the region is waited for, so the refusal is a 400.
 */
export function checkSmallPrompt(modelId: string, promptTokens: number, contextSize: number): void {
  const {promptTokens: limit, positions} = SMALL_GENERATION_LIMITS;
  if (promptTokens > limit) {
    throw new ApiError("context_length", `messages: the prompt has ${promptTokens} tokens, template included; ${modelId} takes prompts of up to ` +
      `${limit.toLocaleString("en-US")} tokens`, {param: "messages"});
  }
  if (promptTokens >= contextSize) {
    const why = contextSize < positions
      ? `the model file behind ${modelId} holds ${contextSize} positions (its training context, below the ${positions.toLocaleString("en-US")} the spec allows)`
      : `${modelId} holds ${contextSize} positions for prompt plus answer`;
    throw new ApiError("context_length", `messages: the prompt has ${promptTokens} tokens, template included, but ${why}, leaving no room for an ` +
      `answer; the longest prompt here is ${contextSize - 1} tokens`, {param: "messages"});
  }
}
