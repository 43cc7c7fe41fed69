// The fields the three image routes share, read the same way from a JSON body (generations) and from multipart
// text fields (edits, variations): every rule of the spec's image tables, each refusal a 400 naming the field and
// the allowed values. Fields OpenAI defines that change nothing here (quality other than low, style, user,
// moderation) are checked for their type and otherwise drawn the same; fields that ask for what is not drawn
// (transparency, another format, streaming) are refused.

import {invalidField} from "../../../core/errors.ts";
import {IMAGE_STEPS, MAX_SEED} from "../../../side-models/images/runner.ts";

export const IMAGE_SIZES = ["256x256", "512x512", "768x768", "1024x1024", "768x512", "512x768", "1024x768", "768x1024", "1024x576",
  "576x1024", "640x512", "512x640", "896x512", "512x896", "1024x448", "448x1024", "1024x512", "512x1024", "1024x640", "640x1024"] as const;
/** `auto`, and every size of an edit or variation. */
export const DEFAULT_SIZE = "512x512";
export const MAX_IMAGES = 4;
export const MAX_PROMPT_CHARS = 32_000;
export const RESPONSE_FORMATS = ["b64_json", "url"] as const;

export interface ImageOptions {
  width: number;
  height: number;
  n: number;
  responseFormat: (typeof RESPONSE_FORMATS)[number];
  seed: number | null;
  quality: string | null;
  size: string;
}

export type Fields = Record<string, unknown>;

/** A multipart text field holds a string; a JSON field its own type. Numbers may come as either. */
function integer(fields: Fields, name: string, min: number, max: number, rule: string): number | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < min || n > max) throw invalidField(name, rule);
  return n;
}

function text(fields: Fields, name: string): string | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalidField(name, "must be a string");
  return v;
}

function oneOf<T extends string>(fields: Fields, name: string, allowed: readonly T[], rule?: string): T | undefined {
  const v = text(fields, name);
  if (v === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw invalidField(name, rule ?? `must be one of ${allowed.join(", ")}`);
  return v as T;
}

/** The prompt: required for generations and edits, refused by variations (which take none). */
export function readPrompt(fields: Fields, required: boolean): string {
  const prompt = text(fields, "prompt");
  if (!required) {
    if (prompt !== undefined && prompt !== "") {
      throw invalidField("prompt", "is not taken by variations (each seed gives another take of the picture); send it to /v1/images/edits");
    }
    return "";
  }
  if (prompt === undefined || prompt.trim() === "") throw invalidField("prompt", "is required: the text of the picture to draw");
  if (prompt.length > MAX_PROMPT_CHARS) {
    throw invalidField("prompt", `is longer than ${MAX_PROMPT_CHARS} characters (the model reads its first 512 tokens)`);
  }
  return prompt;
}

/** The options every route shares; `sizes` are the ones the route draws (edits and variations: 512x512 only). */
export function readImageOptions(fields: Fields, sizes: readonly string[]): ImageOptions {
  const sizeRule = `must be auto or one of ${sizes.join(", ")}`;
  const size = oneOf(fields, "size", ["auto", ...sizes], sizeRule) ?? "auto";
  const [width, height] = (size === "auto" ? DEFAULT_SIZE : size).split("x").map(Number) as [number, number];
  for (const name of ["steps", "num_inference_steps"]) {
    const steps = fields[name];
    if (steps !== undefined && steps !== null && Number(steps) !== IMAGE_STEPS) {
      throw invalidField(name, `must be ${IMAGE_STEPS}: the model is distilled to ${IMAGE_STEPS} steps and draws with no other count`);
    }
    if (typeof steps === "string" && steps.trim() === "") throw invalidField(name, `must be ${IMAGE_STEPS}`);
  }
  const n = integer(fields, "n", 1, MAX_IMAGES, `must be an integer from 1 to ${MAX_IMAGES}`) ?? 1;
  const responseFormat = oneOf(fields, "response_format", RESPONSE_FORMATS) ?? "b64_json";
  oneOf(fields, "output_format", ["png"], "must be png: the pictures are drawn as PNG only");
  const quality = text(fields, "quality") ?? null;
  if (quality === "low") throw invalidField("quality", "low is not drawn: the model draws at one quality; leave quality out or send auto");
  if (quality !== null && !["auto", "standard", "hd", "medium", "high"].includes(quality)) {
    throw invalidField("quality", "must be one of auto, standard, hd, medium, high (all draw the same picture)");
  }
  oneOf(fields, "style", ["vivid", "natural"]);
  oneOf(fields, "moderation", ["auto", "low"]);
  text(fields, "user");
  const background = oneOf(fields, "background", ["auto", "opaque", "transparent"]);
  if (background === "transparent") throw invalidField("background", "transparent is not drawn: the pictures are opaque; send auto or opaque");
  if (fields.output_compression !== undefined && fields.output_compression !== null) {
    throw invalidField("output_compression", "applies to jpeg and webp; the pictures are PNG only");
  }
  const stream = fields.stream;
  if (stream !== undefined && stream !== null && stream !== false && stream !== "false") {
    throw invalidField("stream", "images are not streamed; leave stream out or send false");
  }
  integer(fields, "partial_images", 0, 0, "must be 0: images are not streamed");
  const seed = integer(fields, "seed", 0, MAX_SEED, `must be an integer from 0 to ${MAX_SEED}`) ?? null;
  return {width, height, n, responseFormat, seed, quality, size: `${width}x${height}`};
}

/** The fields a route knows; any other is refused by name, as an OpenAI client's typo should be. */
export function refuseUnknown(fields: Fields, known: readonly string[]): void {
  for (const name of Object.keys(fields)) {
    if (!known.includes(name)) throw invalidField(name, `is not a field of this route; its fields are ${known.join(", ")}`);
  }
}

export const COMMON_FIELDS = ["model", "prompt", "size", "n", "response_format", "output_format", "seed", "quality", "style", "moderation",
  "user", "background", "output_compression", "stream", "partial_images", "steps", "num_inference_steps"] as const;
