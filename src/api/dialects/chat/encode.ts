// GenerationEvents → chat-completions bodies and stream chunks. Shapes are checked against the official
// SDK's types; the stream follows what `client.chat.completions.stream()` demands: the role in the first
// delta, a finish_reason in the last choice chunk, the usage chunk (choices: []) only when asked, then [DONE].

import type {ChatCompletion, ChatCompletionChunk, ChatCompletionMessageFunctionToolCall} from "openai/resources/chat/completions";
import type {ApiError} from "../../../core/errors.ts";
import type {GenerationEvent, PromptProgress, Timings, UsageCounts} from "../../../core/generation.ts";
import {openAiErrorBody} from "../../error-body.ts";
import type {StreamEncoder} from "../../serve-generation.ts";

export interface ChatIdentity {
  id: string;
  created: number;
  model: string;
}

type Usage = NonNullable<ChatCompletion["usage"]>;
type Done = Extract<GenerationEvent, {type: "done"}>;

export function chatUsage(u: UsageCounts): Usage {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: {cached_tokens: u.cachedTokens},
    completion_tokens_details: {reasoning_tokens: u.reasoningTokens},
  };
}

type ToolCall = ChatCompletionMessageFunctionToolCall;

export function chatCompletionBody(who: ChatIdentity, events: GenerationEvent[]): ChatCompletion & {timings: Timings} {
  let content = "";
  let reasoning = "";
  const calls: ToolCall[] = [];
  let done: Done | undefined;
  for (const ev of events) {
    if (ev.type === "text") content += ev.text;
    else if (ev.type === "reasoning") reasoning += ev.text;
    else if (ev.type === "tool_call_start") calls[ev.index] = {id: ev.id, type: "function", function: {name: ev.name, arguments: ""}};
    else if (ev.type === "tool_call_args") calls[ev.index]!.function.arguments += ev.text;
    else if (ev.type === "done") done = ev;
  }
  if (!done) throw new Error("generation ended without a done event");
  const message: ChatCompletion["choices"][number]["message"] & {reasoning_content?: string} = {
    role: "assistant",
    // OpenAI sends null content beside tool calls when the model wrote no text.
    content: calls.length > 0 && content === "" ? null : content,
    refusal: null,
  };
  if (calls.length > 0) message.tool_calls = calls;
  if (reasoning) message.reasoning_content = reasoning;
  return {
    id: who.id,
    object: "chat.completion",
    created: who.created,
    model: who.model,
    choices: [{
      index: 0,
      message,
      logprobs: done.logprobs ? {content: done.logprobs, refusal: null} : null,
      finish_reason: done.finishReason,
    }],
    usage: chatUsage(done.usage),
    timings: done.timings,
  };
}

type Chunk = ChatCompletionChunk & {timings?: Timings; prompt_progress?: PromptProgress};

export function chatStreamEncoder(who: ChatIdentity, includeUsage: boolean): StreamEncoder {
  let roleSent = false;
  const chunk = (choices: ChatCompletionChunk["choices"], extra: Partial<Chunk> = {}): Chunk => ({
    id: who.id,
    object: "chat.completion.chunk",
    created: who.created,
    model: who.model,
    choices,
    ...(includeUsage ? {usage: null} : {}),
    ...extra,
  });
  const roleFrame = () => {
    if (roleSent) return [];
    roleSent = true;
    return [{data: chunk([{index: 0, delta: {role: "assistant", content: "", refusal: null}, logprobs: null, finish_reason: null}])}];
  };
  return {
    frames(ev) {
      switch (ev.type) {
        case "progress":
          return [{data: chunk([], {prompt_progress: ev.progress})}];
        case "text":
          return [...roleFrame(), {data: chunk([{index: 0, delta: {content: ev.text}, logprobs: null, finish_reason: null}])}];
        case "reasoning":
          return [...roleFrame(), {data: chunk([{index: 0, delta: {reasoning_content: ev.text} as ChatCompletionChunk.Choice.Delta,
            logprobs: null, finish_reason: null}])}];
        case "tool_call_start":
          return [...roleFrame(), {data: chunk([{index: 0,
            delta: {tool_calls: [{index: ev.index, id: ev.id, type: "function", function: {name: ev.name, arguments: ""}}]},
            logprobs: null, finish_reason: null}])}];
        case "tool_call_args":
          // Every tool_calls delta carries a function object (some clients require it).
          return [...roleFrame(), {data: chunk([{index: 0, delta: {tool_calls: [{index: ev.index, function: {arguments: ev.text}}]},
            logprobs: null, finish_reason: null}])}];
        case "done": {
          const frames = [...roleFrame(), {data: chunk([{index: 0, delta: {}, logprobs: null, finish_reason: ev.finishReason}], {timings: ev.timings})}];
          if (includeUsage) frames.push({data: chunk([], {usage: chatUsage(ev.usage), timings: ev.timings})});
          return frames;
        }
      }
    },
    terminator: "[DONE]",
    errorFrame: (err: ApiError) => openAiErrorBody(err),
  };
}

/**
 * An answer known whole before any byte is sent (a decision) as a stream: one content chunk (role, the whole answer,
 * its logprobs), the finish chunk, and the usage chunk when asked.
 */
export function wholeAnswerChunks(who: ChatIdentity, events: GenerationEvent[], includeUsage: boolean): Chunk[] {
  const text = events.find((e) => e.type === "text") as Extract<GenerationEvent, {type: "text"}>;
  const done = events.find((e) => e.type === "done") as Done;
  const base = {id: who.id, object: "chat.completion.chunk" as const, created: who.created, model: who.model, ...(includeUsage ? {usage: null} : {})};
  const chunks: Chunk[] = [
    {...base, choices: [{index: 0, delta: {role: "assistant", content: text.text}, logprobs: done.logprobs ? {content: done.logprobs, refusal: null} : null,
      finish_reason: null}]},
    {...base, choices: [{index: 0, delta: {}, logprobs: null, finish_reason: "stop"}], timings: done.timings},
  ];
  if (includeUsage) chunks.push({...base, choices: [], usage: chatUsage(done.usage), timings: done.timings});
  return chunks;
}
