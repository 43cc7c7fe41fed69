// The Responses-style request body. Unknown fields are accepted and ignored (clients such as Codex send
// many); every field we read is checked here so a wrong one gets a 400 naming it. Input items and tool
// entries are only checked to be arrays here: their many shapes are read item by item in input.ts and
// tools.ts, which name the exact field (`input[3].call_id`, `tools[1].tools[0].name`).

import {z} from "zod";
import {budgetFields, samplingFields} from "../../fields/common.ts";

const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"] as const;

const textFormat = z.union([
  z.looseObject({type: z.literal("text")}),
  z.looseObject({type: z.literal("json_object")}),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().max(64).optional(),
    description: z.string().nullish(),
    schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]),
    strict: z.boolean().nullish(),
  }),
], {error: "must be {type: \"text\"}, {type: \"json_object\"} or {type: \"json_schema\", name, schema}"});

export const responsesRequestSchema = z.looseObject({
  model: z.string().nullish(),
  input: z.union([z.string(), z.array(z.unknown())], {error: "must be a string or an array of input items"}),
  instructions: z.string().nullish(),
  ...budgetFields,
  ...samplingFields,
  stream: z.boolean().nullish(),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.looseObject({
    format: textFormat.nullish(),
    // Accepted and ignored: a small model has no verbosity control.
    verbosity: z.enum(["low", "medium", "high"]).nullish(),
  }).nullish(),
  reasoning: z.looseObject({
    effort: z.enum(EFFORTS).nullish(),
    summary: z.enum(["auto", "concise", "detailed"]).nullish(),
    // The older name of `summary`, still sent by some clients.
    generate_summary: z.enum(["auto", "concise", "detailed"]).nullish(),
  }).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  previous_response_id: z.string().nullish(),
  background: z.boolean().nullish(),
  conversation: z.unknown().optional(),
  prompt: z.unknown().optional(),
  // Accepted and ignored (echoed where the Response object has a place for them).
  store: z.boolean().nullish(),
  include: z.array(z.string()).nullish(),
  prompt_cache_key: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  service_tier: z.string().nullish(),
  max_tool_calls: z.number().int().min(1).nullish(),
});

export type ResponsesRequestBody = z.infer<typeof responsesRequestSchema>;
