// The Response object: the shell built once per request (ids, echoes of the request, every field the
// Open Responses schema requires, null where we have nothing), and its final form with output, usage
// and timings. Typed with the openai SDK's own types; `output_text` is left to the SDK, which computes it.

import {randomBytes} from "node:crypto";
import type {Response, ResponseOutputItem, ResponseUsage, Tool} from "openai/resources/responses/responses";
import type {FinishReason, Timings, UsageCounts} from "../../../core/generation.ts";
import type {DecodedResponses} from "./decode.ts";

/**
 * The SDK's usage without `cache_write_tokens`: the prompt cache keeps states at points of its own
 * choosing, so a count of tokens "written" would be a guess; cached_tokens (read) is exact.
 */
export type WireUsage = Omit<ResponseUsage, "input_tokens_details"> & {input_tokens_details: {cached_tokens: number}};

/** A Response on the wire: the SDK type without its computed `output_text`, plus our `timings`. */
export type WireResponse = Omit<Response, "output_text" | "usage" | "user"> & {
  /** null until the reply is done (OpenAI sends null in the lifecycle events before completion). */
  usage: WireUsage | null;
  user: string | null;
  // Required by the Open Responses schema, absent from the SDK type:
  /** Always false: nothing is kept after the reply. */
  store: boolean;
  presence_penalty: number;
  frequency_penalty: number;
  timings?: Timings;
};

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}

export function responsesUsage(u: UsageCounts): WireUsage {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: {cached_tokens: u.cachedTokens},
    output_tokens: u.completionTokens,
    output_tokens_details: {reasoning_tokens: u.reasoningTokens},
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

function isFunction(t: unknown): t is {type: "function"; strict?: boolean | null} {
  return typeof t === "object" && t !== null && (t as {type?: unknown}).type === "function";
}

/** The response as it stands before any output: what response.created and response.in_progress carry. */
export function responseShell(who: {id: string; createdAt: number; model: string}, d: DecodedResponses): WireResponse {
  const {body, request} = d;
  const reasoning = body.reasoning;
  return {
    id: who.id,
    object: "response",
    created_at: who.createdAt,
    completed_at: null,
    status: "in_progress",
    model: who.model,
    output: [],
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: request.sampling.temperature,
    top_p: request.sampling.topP,
    presence_penalty: request.sampling.presencePenalty,
    frequency_penalty: request.sampling.frequencyPenalty,
    top_logprobs: 0,
    tool_choice: (body.tool_choice ?? "auto") as Response["tool_choice"],
    // Echoed as sent, with each function's `strict` as it was applied (on unless turned off).
    tools: (body.tools ?? []).map((t) => isFunction(t) ? {...t, strict: t.strict ?? true} : t) as Tool[],
    max_output_tokens: request.maxTokens,
    max_tool_calls: body.max_tool_calls ?? null,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: {effort: reasoning?.effort ?? null, summary: reasoning?.summary ?? reasoning?.generate_summary ?? null},
    text: {format: (body.text?.format ?? {type: "text"}) as NonNullable<Response["text"]>["format"], verbosity: body.text?.verbosity ?? "medium"},
    truncation: body.truncation ?? "disabled",
    // Nothing is kept after the reply, whatever the request asked: say so.
    store: false,
    background: false,
    service_tier: "default",
    user: body.user ?? null,
    safety_identifier: body.safety_identifier ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    access_programs: null,
    usage: null,
  };
}

/** The shell completed: status by finish reason, the output items, usage and timings. */
export function finalResponse(shell: WireResponse, output: ResponseOutputItem[],
  done: {finishReason: FinishReason; usage: UsageCounts; timings: Timings}): WireResponse {
  const incomplete = done.finishReason === "length";
  return {
    ...shell,
    status: incomplete ? "incomplete" : "completed",
    completed_at: Math.floor(Date.now() / 1000),
    incomplete_details: incomplete ? {reason: "max_output_tokens"} : null,
    output,
    usage: responsesUsage(done.usage),
    timings: done.timings,
  };
}
