// The decision text limit: text plus question plus template, 8,192 tokens. Over it is 400 (the spec's
// Errors table), on both decision routes.

import {ApiError} from "../../../core/errors.ts";

export function checkDecisionPrompt(tokens: number, limit: number, param: string): void {
  if (tokens > limit) {
    throw new ApiError("invalid_request",
      `${param}: a decision's text, question and template may take up to ${limit} tokens; this one takes ${tokens}`, {param});
  }
}
