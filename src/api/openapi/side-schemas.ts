// Request schemas of the side-model routes, for /openapi.json only. Those routes decode by hand (side/*/decode.ts,
// side/*/route.ts: each refusal names its field and rule), so these zod shapes restate what the decoders accept;
// test/unit/api/openapi/openapi-side-schemas.test.ts holds each pair to the same verdicts on real and bad bodies.
// Limits that depend on the loaded model (vector size, vocabulary, context) are left to the route.

import {z} from "zod";
import {MAX_EMBEDDING_INPUTS, MIN_DIMENSIONS} from "../side/embeddings/decode.ts";
import {MAX_CLASSIFY_INPUTS} from "../side/classify/decode.ts";
import {MAX_DOCUMENTS} from "../side/rerank/route.ts";
import {MAX_INPUTS} from "../side/moderations/route.ts";
import {MAX_QUESTIONS} from "../side/decide/route.ts";
import {RESPONSE_FORMATS} from "../side/transcriptions/route.ts";

const nonEmpty = z.string().min(1);
const tokenIds = z.array(z.number().int().min(0)).min(1);

export const embeddingsRequestSchema = z.strictObject({
  model: nonEmpty,
  input: z.union([nonEmpty, z.array(nonEmpty).min(1).max(MAX_EMBEDDING_INPUTS)]),
  dimensions: z.number().int().min(MIN_DIMENSIONS).nullish(),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  prompt_name: z.enum(["query", "document"]).nullish(),
  instruction: z.string().regex(/\S/).nullish().describe("only with prompt_name \"query\""),
  user: z.string().optional(),
});

export const classifyRequestSchema = z.strictObject({
  model: nonEmpty,
  input: z.union([nonEmpty, tokenIds, z.array(z.union([nonEmpty, tokenIds])).min(1).max(MAX_CLASSIFY_INPUTS)]),
  use_activation: z.boolean().optional(),
  add_special_tokens: z.boolean().optional(),
  truncate_prompt_tokens: z.union([z.literal(-1), z.number().int().min(1)]).nullish(),
});

const document = z.union([z.string(), z.looseObject({text: z.string()})]);

export const rerankRequestSchema = z.looseObject({
  model: z.string().optional(),
  query: z.string().regex(/\S/),
  documents: z.array(document).min(1).max(MAX_DOCUMENTS),
  top_n: z.number().int().min(1).nullish(),
  return_documents: z.boolean().optional(),
  instruction: z.string().regex(/\S/).nullish(),
});

const textPart = z.looseObject({type: z.literal("text"), text: z.string()});
const guardMessage = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(textPart), z.null()]).optional(),
});

export const moderationRequestSchema = z.looseObject({
  model: z.string().optional(),
  input: z.union([z.string(), z.array(z.string()).min(1).max(MAX_INPUTS), z.array(textPart).min(1)]).optional()
    .describe("send input or messages, not both"),
  messages: z.array(guardMessage).min(1).optional(),
  strict: z.boolean().optional(),
}).refine((b) => (b.input != null) !== (b.messages != null), {message: "send either input or messages, not both nor neither"})
  .meta({oneOf: [{required: ["input"]}, {required: ["messages"]}]});

const question = z.strictObject({
  type: z.enum(["choice", "score", "noul"]),
  instructions: z.string().regex(/\S/),
  criteria: z.union([z.record(z.string(), z.string().nullable()), z.array(z.string().regex(/\S/)), z.null()]).optional()
    .describe("choice: {option: description | null}; score: [level 0, level 1, ...]; noul: none"),
});

export const decideRequestSchema = z.strictObject({
  model: z.string().optional(),
  state: z.union([z.string().regex(/\S/), z.record(z.string(), z.unknown()), z.array(z.unknown())]),
  questions: z.record(z.string().regex(/\S/), question)
    .refine((q) => Object.keys(q).length >= 1 && Object.keys(q).length <= MAX_QUESTIONS)
    .meta({minProperties: 1, maxProperties: MAX_QUESTIONS}),
});

/** POST /v1/audio/transcriptions, as multipart form fields (side/transcriptions/route.ts reads them). */
export const transcriptionRequestSchema = z.looseObject({
  file: z.string().meta({format: "binary"}).describe("a WAV recording: PCM 8 to 32-bit or float, any sample rate, any channels; at most 20 minutes or 25 MiB"),
  model: z.string().optional().describe("any name reaches the loaded speech model"),
  language: z.string().optional().describe("a two-letter code or a language name; absent = detected"),
  prompt: z.string().optional().describe("context such as names or terms"),
  response_format: z.enum(RESPONSE_FORMATS).optional(),
  temperature: z.number().min(0).max(1).optional().describe("accepted; decoding is greedy (0)"),
  stream: z.literal(false).optional().describe("transcriptions are not streamed"),
});
