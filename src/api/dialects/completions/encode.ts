// GenerationEvents → completions bodies and stream chunks (OpenAI's `text_completion` shape) with timings.

import type {Completion} from "openai/resources/completions";
import type {ApiError} from "../../../core/errors.ts";
import type {FinishReason, GenerationEvent, PromptProgress, Timings, TokenLogprob, UsageCounts} from "../../../core/generation.ts";
import {openAiErrorBody} from "../../error-body.ts";
import type {StreamEncoder} from "../../serve-generation.ts";

export interface CompletionIdentity {
  id: string;
  created: number;
  model: string;
}

type Usage = NonNullable<Completion["usage"]>;
type Logprobs = NonNullable<Completion["choices"][number]["logprobs"]>;

/** The legacy shape: parallel arrays, alternatives as {token: logprob} maps, offsets into the text. */
function legacyLogprobs(entries: TokenLogprob[], withTop: boolean): Logprobs {
  const offsets: number[] = [];
  let at = 0;
  for (const e of entries) {
    offsets.push(at);
    at += e.token.length;
  }
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    ...(withTop ? {top_logprobs: entries.map((e) => Object.fromEntries(e.top_logprobs.map((t) => [t.token, t.logprob])))} : {}),
    text_offset: offsets,
  };
}

function usage(u: UsageCounts): Usage {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: {cached_tokens: u.cachedTokens},
    completion_tokens_details: {reasoning_tokens: u.reasoningTokens},
  };
}

export function completionBody(who: CompletionIdentity, events: GenerationEvent[], topAsked = 0): Completion & {timings: Timings} {
  let text = "";
  let done: Extract<GenerationEvent, {type: "done"}> | undefined;
  for (const ev of events) {
    if (ev.type === "text") text += ev.text;
    else if (ev.type === "done") done = ev;
  }
  if (!done) throw new Error("generation ended without a done event");
  return {
    id: who.id,
    object: "text_completion",
    created: who.created,
    model: who.model,
    choices: [{index: 0, text, logprobs: done.logprobs ? legacyLogprobs(done.logprobs, topAsked > 0) : null, finish_reason: rawFinish(done.finishReason)}],
    usage: usage(done.usage),
    timings: done.timings,
  };
}

type Chunk = Omit<Completion, "usage"> & {usage?: Usage | null; timings?: Timings; prompt_progress?: PromptProgress};

export function completionStreamEncoder(who: CompletionIdentity, includeUsage: boolean): StreamEncoder {
  const chunk = (choices: Completion["choices"], extra: Partial<Chunk> = {}): Chunk => ({
    id: who.id,
    object: "text_completion",
    created: who.created,
    model: who.model,
    choices,
    ...(includeUsage ? {usage: null} : {}),
    ...extra,
  });
  return {
    frames(ev) {
      switch (ev.type) {
        case "progress":
          return [{data: chunk([], {prompt_progress: ev.progress})}];
        case "text":
          return [{data: chunk([{index: 0, text: ev.text, logprobs: null, finish_reason: null as never}])}];
        case "done": {
          const frames = [{data: chunk([{index: 0, text: "", logprobs: null, finish_reason: rawFinish(ev.finishReason)}], {timings: ev.timings})}];
          if (includeUsage) frames.push({data: chunk([], {usage: usage(ev.usage), timings: ev.timings})});
          return frames;
        }
        default:
          // Raw prompts have no reasoning split and no tools.
          return [];
      }
    },
    terminator: "[DONE]",
    errorFrame: (err: ApiError) => openAiErrorBody(err),
  };
}

/** Raw prompts never carry tools, so a tool-call finish cannot happen here; map it to "stop" to stay in the API's set. */
function rawFinish(reason: FinishReason): "stop" | "length" {
  return reason === "length" ? "length" : "stop";
}
