// Chat-completions body → GenerationRequest. Every refusal of a chat request is raised here.

import {invalidField, invalidRequest} from "../../../core/errors.ts";
import type {GenerationRequest} from "../../../core/generation.ts";
import type {TemplateMessage} from "../../../core/messages.ts";
import {decodeSampling, decodeStops, resolveBudget} from "../../fields/common.ts";
import {resolveLogprobs} from "../../fields/logprobs.ts";
import {decodeTools, PICTURE_REASON, type ToolInput} from "../../fields/tools.ts";
import {PictureCollector} from "../../fields/pictures.ts";
import {parseBody} from "../../fields/validate.ts";
import type {DecodeContext} from "../../decode-context.ts";
import type {ServedModel} from "../../model-router.ts";
import {chatRequestSchema, type ChatMessageBody, type ChatRequestBody} from "./schema.ts";

export interface DecodedChat {
  body: ChatRequestBody;
  request: GenerationRequest;
  stream: boolean;
  includeUsage: boolean;
}

export type ChatDecodeContext = DecodeContext;

/** OpenAI's tool entries: `{type: "function", function: {name, description, parameters, strict}}`. */
function toolInputs(raw: unknown[] | null | undefined): ToolInput[] {
  return (raw ?? []).map((t, i) => {
    const field = `tools[${i}]`;
    if (typeof t !== "object" || t === null || Array.isArray(t)) throw invalidField(field, "must be an object {type: \"function\", function: {...}}");
    const o = t as {type?: unknown; function?: unknown};
    if (o.type !== "function") throw invalidField(`${field}.type`, `must be "function" (got ${JSON.stringify(o.type)})`);
    const f = o.function;
    if (typeof f !== "object" || f === null || Array.isArray(f)) throw invalidField(`${field}.function`, "is required: {name, description, parameters}");
    const fn = f as Record<string, unknown>;
    // The template is given the entry as the client sent it.
    return {name: fn.name, description: fn.description, parameters: fn.parameters, strict: fn.strict, field: `${field}.function`, templateEntry: t};
  });
}

const MEDIA_PARTS: Record<string, string> = {
  image_url: "an image",
  input_image: "an image",
  input_audio: "audio",
  file: "a file",
};

/** An image part's source string: `image_url: {url}` (OpenAI), or the string itself, also under `input_image`. */
function pictureSource(part: Record<string, unknown>, field: string): {source: string; field: string} {
  const key = part.type === "input_image" ? "image_url" : part.type as string;
  const v = part[key];
  if (typeof v === "string") return {source: v, field: `${field}.${key}`};
  const url = typeof v === "object" && v !== null ? (v as {url?: unknown}).url : undefined;
  if (typeof url !== "string") throw invalidField(`${field}.${key}.url`, "is required: a base64 data URL (data:image/png;base64,...) or bare base64");
  return {source: url, field: `${field}.${key}.url`};
}

function flattenContent(m: ChatMessageBody, i: number, pictures: PictureCollector | null): string {
  const c = m.content;
  if (c === undefined || c === null) {
    if (m.role === "assistant") return "";
    throw invalidField(`messages[${i}].content`, `is required for a ${m.role} message`);
  }
  if (typeof c === "string") return c;
  return c.map((part, j) => {
    if (part.type === "text") {
      const text = (part as {text?: unknown}).text;
      if (typeof text !== "string") throw invalidField(`messages[${i}].content[${j}].text`, "must be a string");
      return text;
    }
    if (part.type === "refusal" && m.role === "assistant") return String((part as {refusal?: unknown}).refusal ?? "");
    if (pictures && (part.type === "image_url" || part.type === "input_image") && m.role !== "assistant") {
      const {source, field} = pictureSource(part as Record<string, unknown>, `messages[${i}].content[${j}]`);
      return pictures.add(source, field);
    }
    const what = Object.hasOwn(MEDIA_PARTS, part.type) ? MEDIA_PARTS[part.type] : undefined;
    if (what) throw invalidField(`messages[${i}].content[${j}]`, `${what} was sent but this server has no vision or audio tower loaded; send text only`);
    throw invalidField(`messages[${i}].content[${j}].type`, `"${part.type}" is not a content part type this server reads (use "text")`);
  }).join("");
}

function toTemplateMessages(messages: ChatMessageBody[], pictures: PictureCollector | null): TemplateMessage[] {
  return messages.map((m, i) => {
    const out: TemplateMessage = {role: m.role, content: flattenContent(m, i, pictures)};
    if (m.name !== undefined) out.name = m.name;
    if (m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0) {
      out.tool_calls = m.tool_calls.map((tc, j) => ({id: tc.id ?? `call_${i}_${j}`, type: "function", function: tc.function}));
    }
    if (m.role === "tool") {
      if (m.tool_call_id === undefined) throw invalidField(`messages[${i}].tool_call_id`, "is required for a tool message");
      out.tool_call_id = m.tool_call_id;
    }
    if (m.role === "assistant" && m.reasoning_content) out.reasoning_content = m.reasoning_content;
    return out;
  });
}

/** The served model's own rules on top of the chat dialect's (the main model adds none). */
export type ChatModelRules = Pick<ServedModel, "screen" | "samplingDefaults" | "thinkingOff">;

export function decodeChat(raw: unknown, ctx: ChatDecodeContext, rules: ChatModelRules = {}): DecodedChat {
  if (rules.screen && typeof raw === "object" && raw !== null && !Array.isArray(raw)) rules.screen(raw as Record<string, unknown>);
  const body = parseBody(chatRequestSchema, raw);
  if (body.n != null && body.n > 1) throw invalidField("n", "only one choice per request is supported (n = 1)");
  const rf = body.response_format;
  const hasSchema = rf != null && rf.type !== "text";
  if (body.top_logprobs != null && body.top_logprobs > 0 && !body.logprobs) {
    throw invalidField("top_logprobs", "needs logprobs: true");
  }
  const stream = body.stream ?? false;
  const maxTokens = resolveBudget(body, ctx.maxTokensCap, "refuse");
  const sampling = decodeSampling(body, rules.samplingDefaults);
  const logprobs = resolveLogprobs({wanted: body.logprobs ?? false, top: body.top_logprobs ?? 0, field: "logprobs", topField: "top_logprobs",
    stream, budget: maxTokens, temperature: sampling.temperature, hasSchema});
  const responseFormat: GenerationRequest["responseFormat"] = !rf || rf.type === "text" ? null
    : rf.type === "json_object" ? {format: {kind: "json_object"}, field: "response_format"}
    : {format: {kind: "json_schema", schema: rf.json_schema.schema}, field: "response_format.json_schema.schema"};
  const pictures = ctx.vision ? new PictureCollector() : null;
  const messages = toTemplateMessages(body.messages, pictures);
  const reasons = [...(logprobs ? ["the request asks for logprobs"] : []), ...(pictures?.media.length ? [PICTURE_REASON] : [])];
  const tools = decodeTools(toolInputs(body.tools), body.tool_choice, body.parallel_tool_calls, {choice: "tool_choice", parallel: "parallel_tool_calls"}, {
    strictEnabled: ctx.strictTools,
    requestReasons: reasons,
    logger: ctx.logger,
    counters: ctx.counters,
    requestId: ctx.requestId,
    eligibility: ctx.strictEligibility,
  });
  // `guard` is only admitted here: the streaming guard, a watcher the composition root attaches, reads it from the raw body.

  const continueFinal = body.continue_final_message ?? false;
  const addGenerationPrompt = body.add_generation_prompt ?? !continueFinal;
  if (continueFinal && addGenerationPrompt) {
    throw invalidRequest("continue_final_message continues the last assistant message, so add_generation_prompt must be false with it",
      "add_generation_prompt");
  }
  const last = body.messages[body.messages.length - 1]!;
  if (continueFinal && last.role !== "assistant") {
    throw invalidField("continue_final_message", `needs the last message to be from the assistant (it is "${last.role}")`);
  }

  const kwargs = body.chat_template_kwargs ?? undefined;
  let enableThinking: boolean | undefined;
  if (kwargs && "enable_thinking" in kwargs) {
    if (typeof kwargs.enable_thinking !== "boolean") throw invalidField("chat_template_kwargs.enable_thinking", "must be a boolean");
    enableThinking = kwargs.enable_thinking;
  }
  if (rules.thinkingOff) enableThinking = false;
  if (body.reasoning_effort === "none") {
    if (enableThinking === true) {
      throw invalidRequest("reasoning_effort \"none\" turns thinking off but chat_template_kwargs.enable_thinking is true", "reasoning_effort");
    }
    enableThinking = false;
  }

  const request: GenerationRequest = {
    prompt: {
      kind: "chat",
      messages,
      addGenerationPrompt,
      continueFinalMessage: continueFinal,
      enableThinking,
      reasoningEffort: body.reasoning_effort ?? undefined,
      templateKwargs: kwargs,
    },
    promptField: "messages",
    maxTokens,
    sampling,
    stop: decodeStops(body.stop),
    stopTokenIds: body.stop_token_ids ?? [],
    wantProgress: stream && (body.return_progress ?? false),
    logprobs,
    responseFormat,
    tools,
    ...(pictures?.media.length ? {media: pictures.media} : {}),
  };
  return {body, request, stream, includeUsage: stream && (body.stream_options?.include_usage ?? false)};
}
