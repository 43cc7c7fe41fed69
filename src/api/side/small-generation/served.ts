// Small generation (model nx3.5-2b) as the chat route serves it: its own handle (engine, pipeline, template,
// identity) through the same chat dialect and serveGeneration as the main model, with its rules on top: what it
// refuses (it is text only: no tools, no schema, no logprobs, no thinking, no guard), its sampling defaults
// (temperature 1.0, top_k 20, presence_penalty 2.0 where the request sets none) and its prompt limit. Sessions
// and the coding-agent mapping do not apply to it; neither does the prompt cache.

import {invalidField} from "../../../core/errors.ts";
import type {ServedModel} from "../../model-router.ts";
import {checkSmallPrompt, SMALL_GENERATION_SAMPLING} from "../../../side-models/small-generation/limits.ts";
import type {SmallGenerationRunner} from "../../../side-models/small-generation/runner.ts";
import type {Logger} from "../../../observability/log.ts";

const TEXT_ONLY = "small generation is text only";

function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

/**
 * Refusals read from the raw body, before the chat decode: a schema there would otherwise be compiled (and
 * maybe refused for a keyword) when the real reason is that this model takes none.
 */
function refuseWhatSmallGenerationLacks(model: string, body: Record<string, unknown>): void {
  const tools = body.tools;
  if (present(tools) && !(Array.isArray(tools) && tools.length === 0)) {
    throw invalidField("tools", `${model}: ${TEXT_ONLY}, with no tools; send the request without tools, or to the main model`);
  }
  if (present(body.tool_choice) && body.tool_choice !== "none") {
    throw invalidField("tool_choice", `${model}: ${TEXT_ONLY}, with no tools; leave tool_choice out (or "none")`);
  }
  const rf = body.response_format as {type?: unknown} | null | undefined;
  if (present(rf) && (typeof rf !== "object" || rf!.type !== "text")) {
    throw invalidField("response_format", `${model}: ${TEXT_ONLY}; a JSON schema or JSON mode is not enforced on it (only {type: "text"})`);
  }
  if (body.logprobs === true) throw invalidField("logprobs", `${model}: ${TEXT_ONLY}; log probabilities are not returned`);
  if (typeof body.top_logprobs === "number" && body.top_logprobs > 0) {
    throw invalidField("top_logprobs", `${model}: ${TEXT_ONLY}; log probabilities are not returned`);
  }
  if (present(body.reasoning_effort) && body.reasoning_effort !== "none") {
    throw invalidField("reasoning_effort", `${model} answers with thinking off; only "none" is accepted`);
  }
  const kwargs = body.chat_template_kwargs as Record<string, unknown> | null | undefined;
  if (kwargs && typeof kwargs === "object" && kwargs.enable_thinking === true) {
    throw invalidField("chat_template_kwargs.enable_thinking", `${model} answers with thinking off; send false or leave it out`);
  }
  if (present(body.guard) && body.guard !== false) {
    throw invalidField("guard", `the streaming guard watches replies of the main model; ${model} replies are not watched`);
  }
  const messages = body.messages;
  if (Array.isArray(messages)) {
    messages.forEach((m: unknown, i) => {
      const msg = m as {role?: unknown; tool_calls?: unknown} | null;
      if (msg?.role === "tool") throw invalidField(`messages[${i}].role`, `${model}: ${TEXT_ONLY}, with no tools, so no tool results`);
      if (Array.isArray(msg?.tool_calls) && msg!.tool_calls.length > 0) {
        throw invalidField(`messages[${i}].tool_calls`, `${model}: ${TEXT_ONLY}, with no tools, so no tool calls`);
      }
    });
  }
}

/** The rules the chat dialect applies for the small model (unit-tested without a model). */
export function smallGenerationRules(model: string): Required<Pick<ServedModel, "screen" | "samplingDefaults" | "thinkingOff">> {
  return {screen: (body) => refuseWhatSmallGenerationLacks(model, body), samplingDefaults: {...SMALL_GENERATION_SAMPLING}, thinkingOff: true};
}

export function smallGenerationModel(runner: SmallGenerationRunner, opts: {queueTimeoutMs: number; maxToolCalls: number; logger: Logger}): ServedModel {
  return {
    handle: runner.handle(opts),
    id: runner.id,
    chatRoute: "chat_small_generation",
    sessions: false,
    guarded: false,
    ...smallGenerationRules(runner.id),
    checkPrompt: (promptTokens) => checkSmallPrompt(runner.id, promptTokens, runner.contextSize),
  };
}
