// Log-probability requests (the classifier pattern): which shapes are served and which are refused, the
// same on the chat and completions routes. Each refusal names the rule it breaks.

import {invalidRequest} from "../../core/errors.ts";

export const MAX_TOP_LOGPROBS = 20;

export interface LogprobsAsk {
  /** The request asked for log probabilities at all. */
  wanted: boolean;
  /** Alternatives per token (0 = only the chosen token). */
  top: number;
  /** The field names as this route spells them, for messages. */
  field: string;
  topField: string;
  stream: boolean;
  budget: number | null;
  temperature: number;
  hasSchema: boolean;
}

/** Rule 7 of the classifier pattern. Returns what the engine should compute, or null when nothing was asked. */
export function resolveLogprobs(a: LogprobsAsk): {top: number} | null {
  if (a.top > MAX_TOP_LOGPROBS) throw invalidRequest(`${a.topField}: at most ${MAX_TOP_LOGPROBS} alternatives per token (got ${a.top})`, a.topField);
  if (!a.wanted) return null;
  if (a.stream) throw invalidRequest(`${a.field}: log probabilities are returned on non-streamed requests only; send stream: false`, a.field);
  if (a.hasSchema) throw invalidRequest(`${a.field}: log probabilities cannot be combined with response_format`, a.field);
  const overOne = a.budget === null || a.budget > 1;
  const budget = a.budget === null ? "no budget (unlimited)" : `max_tokens ${a.budget}`;
  if (a.top > 0 && overOne) {
    throw invalidRequest(`${a.topField}: alternatives are for scoring one token; send max_tokens: 1 (got ${budget})`, a.topField);
  }
  if (a.temperature === 0 && overOne) {
    throw invalidRequest(`${a.field}: at temperature 0 log probabilities are for scoring one token; ` +
      `send max_tokens: 1 (got ${budget}), or sample with temperature above 0`, a.field);
  }
  return {top: a.top};
}
