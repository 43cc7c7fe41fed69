// Completions body → GenerationRequest. No chat template: the text reaches the model as sent.

import {invalidField} from "../../../core/errors.ts";
import type {GenerationRequest, PromptSpec} from "../../../core/generation.ts";
import {decodeSampling, decodeStops, resolveBudget} from "../../fields/common.ts";
import {resolveLogprobs} from "../../fields/logprobs.ts";
import {parseBody} from "../../fields/validate.ts";
import type {DecodeContext} from "../../decode-context.ts";
import {completionsRequestSchema, type CompletionsRequestBody} from "./schema.ts";

export interface DecodedCompletion {
  body: CompletionsRequestBody;
  request: GenerationRequest;
  stream: boolean;
  includeUsage: boolean;
}

function decodePrompt(prompt: CompletionsRequestBody["prompt"]): PromptSpec {
  if (typeof prompt === "string") return {kind: "text", text: prompt};
  if (prompt.length === 0) throw invalidField("prompt", "must not be empty");
  const first = prompt[0];
  if (typeof first === "number") return {kind: "tokens", tokens: prompt as number[]};
  if (prompt.length > 1) throw invalidField("prompt", "send one prompt per request (an array of several prompts is not supported)");
  return typeof first === "string" ? {kind: "text", text: first} : {kind: "tokens", tokens: first as number[]};
}

export function decodeCompletion(raw: unknown, ctx: Pick<DecodeContext, "maxTokensCap">): DecodedCompletion {
  const body = parseBody(completionsRequestSchema, raw);
  if (body.n != null && body.n > 1) throw invalidField("n", "only one choice per request is supported (n = 1)");
  if (body.best_of != null && body.best_of > 1) throw invalidField("best_of", "only 1 is supported");
  if (body.echo) throw invalidField("echo", "echoing the prompt back is not supported");
  if (body.suffix) throw invalidField("suffix", "fill-in-the-middle suffixes are not supported");
  const stream = body.stream ?? false;
  const maxTokens = resolveBudget(body, ctx.maxTokensCap, "refuse");
  const sampling = decodeSampling(body);
  // OpenAI's legacy field: a number of alternatives; 0 still returns the chosen tokens' log probabilities.
  const logprobs = resolveLogprobs({wanted: body.logprobs != null, top: body.logprobs ?? 0, field: "logprobs", topField: "logprobs",
    stream, budget: maxTokens, temperature: sampling.temperature, hasSchema: false});
  const request: GenerationRequest = {
    prompt: decodePrompt(body.prompt),
    promptField: "prompt",
    maxTokens,
    sampling,
    stop: decodeStops(body.stop),
    stopTokenIds: body.stop_token_ids ?? [],
    wantProgress: stream && (body.return_progress ?? false),
    logprobs,
    responseFormat: null,
  };
  return {body, request, stream, includeUsage: stream && (body.stream_options?.include_usage ?? false)};
}
