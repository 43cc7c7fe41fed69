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
import {IMAGE_SIZES, MAX_IMAGES, MAX_PROMPT_CHARS, RESPONSE_FORMATS as IMAGE_FORMATS} from "../side/images/fields.ts";
import {IMAGE_STEPS, MAX_SEED} from "../../side-models/images/runner.ts";

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

/** The fields the three image routes share (side/images/fields.ts reads them). */
const imageFields = {
  model: z.string().optional().describe("any name but one of the server's own reaches the loaded image model"),
  n: z.number().int().min(1).max(MAX_IMAGES).nullish().describe("pictures drawn one after another"),
  response_format: z.enum(IMAGE_FORMATS).nullish().describe("b64_json (default) or url (a data URL of the PNG)"),
  output_format: z.literal("png").nullish(),
  seed: z.number().int().min(0).max(MAX_SEED).nullish().describe("picture i is drawn at seed + i; absent: the request draws its own"),
  quality: z.enum(["auto", "standard", "hd", "medium", "high"]).nullish().describe("low is refused; the others draw the same picture"),
  style: z.enum(["vivid", "natural"]).nullish(),
  moderation: z.enum(["auto", "low"]).nullish(),
  user: z.string().nullish(),
  background: z.enum(["auto", "opaque"]).nullish().describe("transparent is refused"),
  stream: z.literal(false).nullish().describe("images are not streamed"),
  partial_images: z.literal(0).nullish(),
  steps: z.literal(IMAGE_STEPS).nullish(),
  num_inference_steps: z.literal(IMAGE_STEPS).nullish(),
};
const imagePrompt = z.string().regex(/\S/).max(MAX_PROMPT_CHARS).describe("written into the model's chat template and cut to 512 tokens");

export const imageGenerationRequestSchema = z.strictObject({
  ...imageFields,
  prompt: imagePrompt,
  size: z.enum(["auto", ...IMAGE_SIZES]).nullish().describe("auto is 512x512"),
});

const picture = z.string().meta({format: "binary"}).describe("one picture: PNG, JPEG, WebP, GIF or BMP, up to 25 MiB; cropped to a centred square, 512x512");

/** POST /v1/images/edits, as multipart form fields. */
export const imageEditRequestSchema = z.looseObject({
  ...imageFields,
  image: picture,
  prompt: imagePrompt,
  size: z.enum(["auto", "512x512"]).optional(),
  input_fidelity: z.enum(["high", "low"]).optional(),
});

/** POST /v1/images/variations, as multipart form fields: no prompt; each seed gives another take. */
export const imageVariationRequestSchema = z.looseObject({
  ...imageFields,
  image: picture,
  size: z.enum(["auto", "512x512"]).optional(),
});
