// Messages-style body → GenerationRequest, for POST /v1/messages and /v1/messages/count_tokens (the count
// decodes exactly what generation would, so its number is the prompt generation renders). Every refusal
// of a Messages request is raised here or in content.ts.
//
// Decisions (see also the spec's "Messages-style route details"):
// - Thinking is off unless the request asks (`thinking.type` enabled or adaptive): Anthropic clients do
//   not expect thinking blocks they did not ask for. `budget_tokens` becomes the reasoning budget and must
//   be below max_tokens (Anthropic's rule); Anthropic's floor of 1024 is not applied to a local model.
// - `output_config.effort` is the chat route's reasoning_effort: "none" turns thinking off (400 beside a
//   thinking config that turns it on); the other levels reach templates that read `reasoning_effort` (gpt-oss),
//   as on the chat route.
// - max_tokens above max_tokens_cap runs with the cap (logged once per process).

import type {IncomingHttpHeaders} from "node:http";
import {invalidField, invalidRequest} from "../../../core/errors.ts";
import type {GenerationRequest} from "../../../core/generation.ts";
import {decodeSampling, decodeStops, resolveBudget} from "../../fields/common.ts";
import {decodeTools, PICTURE_REASON, type ToolInput} from "../../fields/tools.ts";
import {PictureCollector} from "../../fields/pictures.ts";
import {parseBody} from "../../fields/validate.ts";
import type {DecodeContext} from "../../decode-context.ts";
import type {Logger} from "../../../observability/log.ts";
import {decodeConversation} from "./content.ts";
import {countTokensSchema, messagesSchema, READ_FIELDS, type MessagesBody} from "./schema.ts";

/** Versions of the API this route speaks (`msg-version`, or `anthropic-version` as Anthropic's SDKs send it). */
export const KNOWN_VERSIONS: ReadonlySet<string> = new Set(["2023-06-01"]);

/** Remembers what was already logged, so a note is written once per process, not once per request. */
export class LogOnce {
  private readonly seen = new Set<string>();

  constructor(readonly logger: Logger, private readonly limit = 1024) {}

  /** The keys not noted before (and now noted). Past the limit nothing new is noted: the log stays bounded. */
  fresh(keys: Iterable<string>): string[] {
    const out: string[] = [];
    for (const k of keys) {
      if (this.seen.has(k) || this.seen.size >= this.limit) continue;
      this.seen.add(k);
      out.push(k);
    }
    return out;
  }
}

/** The shared decode context, plus the request's headers (its msg-version) and the dialect's log-once notes. */
export interface MessagesDecodeContext extends DecodeContext {
  headers: IncomingHttpHeaders;
  notes: LogOnce;
}

export interface DecodedMessages {
  body: MessagesBody;
  request: GenerationRequest;
  stream: boolean;
  /** To tell a stop string from stop_sequences (stop_reason "stop_sequence") from the end of the turn. */
  stopSequences: string[];
  /** "omitted": thinking blocks carry the signature but no text. */
  thinkingDisplay: "summarized" | "omitted";
}

type Mode = "create" | "count";

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Fields, server tools and versions this server does not act on: accepted, and each named once in the log. */
function noteUnread(raw: Record<string, unknown>, ctx: MessagesDecodeContext): void {
  const unused = ctx.notes.fresh(Object.keys(raw).filter((k) => !READ_FIELDS.has(k)).map((k) => `field:${k}`));
  if (unused.length > 0) ctx.logger.info("messages: fields accepted but not used", {fields: unused.map((k) => k.slice(6)).join(",")});
  const version = header(ctx.headers, "msg-version") ?? header(ctx.headers, "anthropic-version");
  if (version !== undefined && !KNOWN_VERSIONS.has(version) && ctx.notes.fresh([`version:${version}`]).length > 0) {
    ctx.logger.info("messages: unknown msg-version, answered as 2023-06-01", {version});
  }
}

interface Thinking {
  enable: boolean;
  budget: number | null;
  display: "summarized" | "omitted";
}

function decodeThinking(body: MessagesBody): Thinking {
  const t = body.thinking ?? undefined;
  const type = t?.type ?? "disabled";
  let budget: number | null = null;
  if (type === "enabled") {
    if (t?.budget_tokens == null) {
      throw invalidField("thinking.budget_tokens", "is required with thinking.type \"enabled\" (or use \"adaptive\" for no budget)");
    }
    budget = t.budget_tokens;
    if (body.max_tokens != null && budget >= body.max_tokens) {
      throw invalidField("thinking.budget_tokens", `must be less than max_tokens (${budget} >= ${body.max_tokens}): the reply needs room after thinking`);
    }
  }
  if (body.output_config?.effort === "none" && type !== "disabled") {
    throw invalidRequest(`output_config.effort "none" turns thinking off but thinking.type is "${type}"`, "output_config.effort");
  }
  return {enable: type !== "disabled" && body.output_config?.effort !== "none", budget, display: t?.display === "omitted" ? "omitted" : "summarized"};
}

/** Custom tools (type absent or "custom") are offered; vendor server tools are dropped, each type named once in the log. */
function splitTools(body: MessagesBody, ctx: MessagesDecodeContext): ToolInput[] {
  const inputs: ToolInput[] = [];
  const dropped: string[] = [];
  (body.tools ?? []).forEach((t, i) => {
    if (t.type != null && t.type !== "custom") {
      dropped.push(t.type);
      return;
    }
    const o = t as Record<string, unknown>;
    // The template is given OpenAI's function-tool entry.
    const templateEntry = {type: "function",
      function: {name: o.name, description: o.description ?? "", parameters: o.input_schema ?? {type: "object", properties: {}}}};
    inputs.push({name: o.name, description: o.description, parameters: o.input_schema, strict: o.strict, field: `tools[${i}]`, templateEntry});
  });
  const fresh = ctx.notes.fresh(dropped.map((d) => `tool:${d}`));
  if (fresh.length > 0) {
    ctx.logger.info("messages: server tools of the vendor dropped (the client's own tools are used)", {types: fresh.map((k) => k.slice(5)).join(",")});
  }
  return inputs;
}

/** Anthropic's tool_choice in the vocabulary decodeTools reads (chat's): auto, required, none, or a named function. */
function choiceOf(body: MessagesBody, inputs: ToolInput[]): {choice: unknown; parallel: boolean | undefined} {
  const tc = body.tool_choice ?? undefined;
  const parallel = tc?.disable_parallel_tool_use == null ? undefined : !tc.disable_parallel_tool_use;
  switch (tc?.type) {
    case undefined:
    case "auto":
      return {choice: "auto", parallel};
    case "any":
      return {choice: "required", parallel};
    case "none":
      return {choice: "none", parallel};
    case "tool": {
      // Checked here so the refusal names Anthropic's field, not the chat shape decodeTools is given.
      if (typeof tc.name !== "string" || tc.name === "") throw invalidField("tool_choice.name", "is required with tool_choice.type \"tool\"");
      if (!inputs.some((t) => t.name === tc.name)) throw invalidField("tool_choice.name", `"${tc.name}" is not one of the request's tools`);
      return {choice: {type: "function", function: {name: tc.name}}, parallel};
    }
  }
}

export function decodeMessages(raw: unknown, ctx: MessagesDecodeContext, mode: Mode): DecodedMessages {
  const body: MessagesBody = parseBody(mode === "create" ? messagesSchema : countTokensSchema, raw);
  noteUnread(raw as Record<string, unknown>, ctx);

  let maxTokens: number | null = null;
  if (body.max_tokens != null) {
    maxTokens = resolveBudget({max_tokens: body.max_tokens}, ctx.maxTokensCap, "clamp");
    if (mode === "create" && body.max_tokens > ctx.maxTokensCap && ctx.notes.fresh(["over-cap"]).length > 0) {
      ctx.logger.info("messages: max_tokens above max_tokens_cap runs with the cap (logged once)", {asked: body.max_tokens, cap: ctx.maxTokensCap});
    }
  }
  const thinking = decodeThinking(body);
  const format = body.output_config?.format ?? body.output_format ?? undefined;
  const responseFormat: GenerationRequest["responseFormat"] = format
    ? {format: {kind: "json_schema", schema: format.schema}, field: body.output_config?.format ? "output_config.format.schema" : "output_format.schema"}
    : null;

  const pictures = ctx.vision ? new PictureCollector() : null;
  const conversation = decodeConversation(body, pictures);
  const inputs = splitTools(body, ctx);
  const {choice, parallel} = choiceOf(body, inputs);
  const tools = decodeTools(inputs, choice, parallel, {choice: "tool_choice", parallel: "tool_choice.disable_parallel_tool_use"}, {
    strictEnabled: ctx.strictTools,
    requestReasons: pictures?.media.length ? [PICTURE_REASON] : [],
    logger: ctx.logger,
    counters: ctx.counters,
    requestId: ctx.requestId,
    eligibility: ctx.strictEligibility,
  });
  const stopSequences = decodeStops(body.stop_sequences);

  const request: GenerationRequest = {
    prompt: {
      kind: "chat",
      messages: conversation.messages,
      // A final assistant message is Anthropic's prefill: the reply continues it.
      addGenerationPrompt: !conversation.prefill,
      continueFinalMessage: conversation.prefill,
      enableThinking: thinking.enable,
      reasoningEffort: body.output_config?.effort ?? undefined,
    },
    promptField: "messages",
    maxTokens,
    sampling: decodeSampling(body),
    stop: stopSequences,
    stopTokenIds: [],
    wantProgress: false,
    logprobs: null,
    responseFormat,
    reasoningBudget: thinking.budget,
    tools,
    ...(pictures?.media.length ? {media: pictures.media} : {}),
  };
  return {body, request, stream: mode === "create" && (body.stream ?? false), stopSequences, thinkingDisplay: thinking.display};
}
