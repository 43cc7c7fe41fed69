// The chat-completions request body. Unknown fields are accepted and ignored (clients send many
// vendor extras); every field we read is checked here so a wrong one gets a 400 naming it.

import {z} from "zod";
import {budgetFields, samplingFields, stopFields, streamFields} from "../../fields/common.ts";

export const ROLES = ["system", "developer", "user", "assistant", "tool"] as const;

const textPart = z.object({type: z.literal("text"), text: z.string()});
/** Parts we recognise but cannot serve without a tower that is not loaded; decode refuses them by name. */
const otherPart = z.looseObject({type: z.string()});
const contentPart = z.union([textPart, otherPart]);

const toolCall = z.looseObject({
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({name: z.string().min(1), arguments: z.string()}),
});

const message = z.looseObject({
  role: z.enum(ROLES),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
  name: z.string().optional(),
  tool_calls: z.array(toolCall).nullish(),
  tool_call_id: z.string().optional(),
  reasoning_content: z.string().nullish(),
});

export const chatRequestSchema = z.looseObject({
  model: z.string().nullish(),
  messages: z.array(message).min(1),
  ...budgetFields,
  ...samplingFields,
  ...stopFields,
  ...streamFields,
  n: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).nullish(),
  response_format: z.union([
    z.looseObject({type: z.literal("text")}),
    z.looseObject({type: z.literal("json_object")}),
    z.looseObject({
      type: z.literal("json_schema"),
      json_schema: z.looseObject({
        name: z.string().max(64).optional(),
        description: z.string().optional(),
        schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]),
        strict: z.boolean().nullish(),
      }),
    }),
  ], {error: "must be {type: \"text\"}, {type: \"json_object\"} or {type: \"json_schema\", json_schema: {name, schema}}"}).nullish(),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  parallel_tool_calls: z.boolean().nullish(),
  continue_final_message: z.boolean().nullish(),
  add_generation_prompt: z.boolean().nullish(),
  chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
  reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
  guard: z.unknown().optional(),
});

export type ChatRequestBody = z.infer<typeof chatRequestSchema>;
export type ChatMessageBody = z.infer<typeof message>;
