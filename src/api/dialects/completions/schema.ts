// The raw completions request body (OpenAI's legacy `/v1/completions`): the prompt is a string seen
// exactly as sent, or token ids.

import {z} from "zod";
import {budgetFields, samplingFields, stopFields, streamFields} from "../../fields/common.ts";

const tokenIds = z.array(z.number().int().min(0)).min(1);

export const completionsRequestSchema = z.looseObject({
  model: z.string().nullish(),
  prompt: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
  ...budgetFields,
  ...samplingFields,
  ...stopFields,
  ...streamFields,
  n: z.number().int().min(1).nullish(),
  best_of: z.number().int().min(1).nullish(),
  echo: z.boolean().nullish(),
  suffix: z.string().nullish(),
  logprobs: z.number().int().min(0).nullish(),
});

export type CompletionsRequestBody = z.infer<typeof completionsRequestSchema>;
