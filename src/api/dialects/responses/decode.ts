// Responses-style body → GenerationRequest. Every refusal of a Responses request is raised here (or in
// input.ts / tools.ts, which this calls).

import {invalidField} from "../../../core/errors.ts";
import type {GenerationRequest} from "../../../core/generation.ts";
import {decodeSampling, resolveBudget} from "../../fields/common.ts";
import {decodeTools, PICTURE_REASON} from "../../fields/tools.ts";
import {parseBody} from "../../fields/validate.ts";
import {PictureCollector} from "../../fields/pictures.ts";
import type {DecodeContext} from "../../decode-context.ts";
import {convertInput} from "./input.ts";
import {responsesRequestSchema, type ResponsesRequestBody} from "./schema.ts";
import {responsesTools} from "./tools.ts";

export type ResponsesDecodeContext = DecodeContext;

export interface DecodedResponses {
  body: ResponsesRequestBody;
  request: GenerationRequest;
  stream: boolean;
  /** The request set reasoning.summary: reasoning is also sent as summary text. */
  summary: boolean;
  /** Function name → namespace, for the namespaced tools the request offered. */
  namespaces: Map<string, string>;
}

const NO_STORE = "there is no response store on this server, so earlier responses cannot be looked up; send the whole conversation in input on every request";

function responseFormat(body: ResponsesRequestBody): GenerationRequest["responseFormat"] {
  const f = body.text?.format;
  if (!f || f.type === "text") return null;
  if (f.type === "json_object") return {format: {kind: "json_object"}, field: "text.format"};
  return {format: {kind: "json_schema", schema: f.schema}, field: "text.format.schema"};
}

export function decodeResponses(raw: unknown, ctx: ResponsesDecodeContext): DecodedResponses {
  const body = parseBody(responsesRequestSchema, raw);
  // Fields that only make sense against stored server state are refused rather than silently ignored.
  if (body.background) throw invalidField("background", `background responses need a response store; ${NO_STORE}`);
  if (body.conversation !== undefined && body.conversation !== null) throw invalidField("conversation", NO_STORE);
  if (body.prompt !== undefined && body.prompt !== null) {
    throw invalidField("prompt", "stored prompt templates are not available on this server; send instructions and input instead");
  }
  if (body.top_logprobs) throw invalidField("top_logprobs", "logprobs are not available on this route; use /v1/chat/completions with logprobs");

  const pictures = ctx.vision ? new PictureCollector() : null;
  const {messages, hasHistory} = convertInput(body.input, body.instructions, pictures);
  if (body.previous_response_id && !hasHistory) {
    throw invalidField("previous_response_id", `${NO_STORE} (input has no earlier assistant turn)`);
  }

  const stream = body.stream ?? false;
  const maxTokens = resolveBudget(body, ctx.maxTokensCap, "refuse");
  const sampling = decodeSampling(body);

  const rt = responsesTools(body.tools, body.tool_choice, {logger: ctx.logger, requestId: ctx.requestId});
  const decoded = decodeTools(rt.inputs, rt.choice, body.parallel_tool_calls, {choice: "tool_choice", parallel: "parallel_tool_calls"}, {
    strictEnabled: ctx.strictTools,
    requestReasons: pictures?.media.length ? [PICTURE_REASON] : [],
    logger: ctx.logger,
    counters: ctx.counters,
    requestId: ctx.requestId,
    eligibility: ctx.strictEligibility,
  });
  // max_tool_calls bounds the reply's calls below the server's own cap (SVC_MAX_TOOL_CALLS).
  const tools = decoded && body.max_tool_calls != null ? {...decoded, maxCalls: body.max_tool_calls} : decoded;

  // reasoning.effort "none" turns thinking off, like chat's reasoning_effort; other efforts reach templates
  // that read reasoning_effort (gpt-oss) and change nothing for the others.
  const enableThinking = body.reasoning?.effort === "none" ? false : undefined;

  // A final assistant message is continued, not answered: the way to branch from inside a reply (see the
  // spec's Sessions section). An assistant turn that ended in calls is answered with a new turn.
  const last = messages[messages.length - 1]!;
  const continueFinal = last.role === "assistant" && !last.tool_calls?.length && last.content !== "";

  const request: GenerationRequest = {
    prompt: {
      kind: "chat",
      messages,
      addGenerationPrompt: !continueFinal,
      continueFinalMessage: continueFinal,
      enableThinking,
      reasoningEffort: body.reasoning?.effort ?? undefined,
    },
    // The conversation is input (instructions folded in): what a refusal about the whole prompt names.
    promptField: "input",
    maxTokens,
    sampling,
    stop: [],
    stopTokenIds: [],
    wantProgress: false,
    logprobs: null,
    responseFormat: responseFormat(body),
    tools,
    ...(pictures?.media.length ? {media: pictures.media} : {}),
  };
  const summary = (body.reasoning?.summary ?? body.reasoning?.generate_summary ?? null) !== null;
  return {body, request, stream, summary, namespaces: rt.namespaces};
}
