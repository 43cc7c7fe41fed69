// The Messages-style request body (also the count_tokens body, which has no max_tokens). Unknown fields
// are accepted (Anthropic clients send many: context_management, service_tier, container, ...) and named
// once in the log by decode.ts; every field read is checked here so a wrong one gets a 400 naming it.
// Content blocks are checked one by one in content.ts, where a refusal can say what the block is.

import {z} from "zod";
import {MAX_STOP_LENGTH, MAX_STOP_STRINGS, samplingFields} from "../../fields/common.ts";

/** Any block; content.ts reads each type's own fields (an unknown type is refused by name there). */
const block = z.looseObject({type: z.string({error: "is required: every content block has a type"})});

const message = z.looseObject({
  // "system" inside messages is accepted (the SDK's MessageParam has it) and becomes user text.
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(block)], {error: "must be a string or an array of content blocks"}),
});

const textBlock = z.looseObject({type: z.literal("text"), text: z.string()});

const jsonSchemaFormat = z.looseObject({
  type: z.literal("json_schema"),
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()], {error: "must be a JSON schema object"}),
});

/** Effort levels: Anthropic's, plus "none" (and "minimal") from the chat route's reasoning_effort. */
export const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

const toolChoice = z.looseObject({
  type: z.enum(["auto", "any", "tool", "none"]),
  name: z.string().optional(),
  disable_parallel_tool_use: z.boolean().nullish(),
});

const fields = {
  model: z.string().nullish(),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock)], {error: "must be a string or an array of text blocks {type: \"text\", text}"}).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  stop_sequences: z.array(z.string().min(1).max(MAX_STOP_LENGTH)).max(MAX_STOP_STRINGS).nullish(),
  stream: z.boolean().nullish(),
  ...samplingFields,
  thinking: z.looseObject({
    type: z.enum(["enabled", "adaptive", "disabled"]),
    budget_tokens: z.number().int().min(1).nullish(),
    // "summarized", "omitted", and newer values (Claude Code sends "updates"): only "omitted" changes the reply.
    display: z.string().nullish(),
  }).nullish(),
  output_config: z.looseObject({
    effort: z.enum(EFFORTS).nullish(),
    format: jsonSchemaFormat.nullish(),
  }).nullish(),
  /** The earlier beta spelling of output_config.format, still sent by older clients. */
  output_format: jsonSchemaFormat.nullish(),
  /** Entries are read in decode.ts: custom tools are used, vendor server tools dropped. */
  tools: z.array(z.looseObject({type: z.string().nullish()}), {error: "must be an array of tool objects"}).nullish(),
  tool_choice: toolChoice.nullish(),
  /** Read and checked; nothing uses it yet. */
  metadata: z.looseObject({user_id: z.string().nullish()}).nullish(),
};

/** count_tokens: max_tokens optional (Anthropic's MessageCountTokensParams has none). */
export const countTokensSchema = z.looseObject(fields);

/** POST /v1/messages: Anthropic requires max_tokens. */
export const messagesSchema = z.looseObject({...fields, max_tokens: z.number().int().min(1)});

export type MessagesBody = z.infer<typeof countTokensSchema>;
export type MessageBody = z.infer<typeof message>;
export type ContentBlockBody = z.infer<typeof block>;

/** Top-level fields this route reads; any other field is accepted and named once in the log. */
export const READ_FIELDS: ReadonlySet<string> = new Set(Object.keys(fields));
