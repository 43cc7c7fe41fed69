// POST /v1/embeddings for embeddingnx-2: an `input` array that mixes texts, pictures and sound clips, each embedded
// in one space, in order. Every input is checked before any is embedded, and each refusal names the input and
// its limit (the spec's: text 8,192 tokens with its prompt, sound 30 s, 64 pictures and clips, 32 MiB of base64 a
// picture).

import {invalidField} from "../../../core/errors.ts";
import {fitForEmbedding, pictureBytes, readPicture} from "../../../media/picture.ts";
import {decodeWavMono16k, encodeWavPcm16, TARGET_RATE, WavError} from "../../../media/wav.ts";
import {MULTIMODAL_LIMITS, MULTIMODAL_PROMPTS, type MultimodalEmbeddingRunner, type MultimodalInput} from
  "../../../side-models/embedding/multimodal-runner.ts";
import {MAX_EMBEDDING_INPUTS, MIN_DIMENSIONS} from "./decode.ts";

const KNOWN = new Set(["model", "input", "dimensions", "encoding_format", "prompt_name", "user"]);
const ITEM_FORMS = "a string, {type: \"image_url\", image_url: {url}} or {type: \"input_audio\", input_audio: {data, format: \"wav\"}}";
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface MultimodalRequest {
  inputs: MultimodalInput[];
  dimensions: number;
  encoding: "float" | "base64";
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A clip's WAV bytes: bare base64 or a data URL; nothing is fetched. */
function clipBytes(data: unknown, field: string): Uint8Array {
  if (typeof data !== "string" || data === "") throw invalidField(field, "is required: the clip as base64 WAV");
  const comma = data.startsWith("data:") ? data.indexOf(",") : -1;
  const text = (comma >= 0 ? data.slice(comma + 1) : data).replace(/\s+/g, "");
  if (/^[a-z][a-z0-9+.-]*:/i.test(text) || !BASE64.test(text) || text.length % 4 === 1) {
    throw invalidField(field, "must be base64 (a WAV file's bytes); no URL is ever fetched");
  }
  return Buffer.from(text, "base64");
}

/** The clip as the engine gets it: mono 16 kHz 16-bit PCM, at most 30 s. */
function readClip(item: Obj, field: string): MultimodalInput {
  const audio = item.input_audio;
  if (!isObj(audio)) throw invalidField(`${field}.input_audio`, "is required: {data, format: \"wav\"}");
  if (audio.format !== "wav") throw invalidField(`${field}.input_audio.format`, `must be "wav" (got ${JSON.stringify(audio.format)})`);
  const bytes = clipBytes(audio.data, `${field}.input_audio.data`);
  let samples: Float32Array;
  try {
    samples = decodeWavMono16k(bytes);
  } catch (err) {
    if (err instanceof WavError) throw invalidField(`${field}.input_audio.data`, err.message);
    throw err;
  }
  const seconds = samples.length / TARGET_RATE;
  if (seconds > MULTIMODAL_LIMITS.audioSeconds) {
    throw invalidField(`${field}.input_audio.data`, `is ${seconds.toFixed(2)} s of sound; embeddingnx-2 reads at most ${MULTIMODAL_LIMITS.audioSeconds} s`);
  }
  if (samples.length === 0) throw invalidField(`${field}.input_audio.data`, "holds no sound (0 samples)");
  return {kind: "audio", wav: encodeWavPcm16(samples)};
}

async function readItemPicture(item: Obj, field: string): Promise<MultimodalInput> {
  const v = item.image_url;
  const url = typeof v === "string" ? v : isObj(v) ? v.url : undefined;
  const at = typeof v === "string" ? `${field}.image_url` : `${field}.image_url.url`;
  if (typeof url !== "string") throw invalidField(at, "is required: a base64 data URL or bare base64");
  const picture = await readPicture(pictureBytes(url, at, MULTIMODAL_LIMITS.pictureBase64), at);
  return {kind: "picture", png: (await fitForEmbedding(picture)).png};
}

export async function decodeMultimodal(body: unknown, runner: MultimodalEmbeddingRunner, signal?: AbortSignal): Promise<MultimodalRequest> {
  if (!isObj(body)) throw invalidField("body", "must be a JSON object");
  for (const k of Object.keys(body)) {
    if (!KNOWN.has(k)) throw invalidField(k, `is not a field of POST /v1/embeddings for ${runner.id} (fields: ${[...KNOWN].join(", ")})`);
  }
  const raw = typeof body.input === "string" ? [body.input] : body.input;
  if (!Array.isArray(raw) || raw.length === 0) throw invalidField("input", `is required: a string, or an array of inputs (${ITEM_FORMS})`);
  if (raw.length > MAX_EMBEDDING_INPUTS) throw invalidField("input", `must hold at most ${MAX_EMBEDDING_INPUTS} inputs`);
  const media = raw.filter((item) => isObj(item)).length;
  if (media > MULTIMODAL_LIMITS.media) {
    throw invalidField("input", `holds ${media} pictures and clips; ${runner.id} reads at most ${MULTIMODAL_LIMITS.media} per request`);
  }

  let dimensions: number = MULTIMODAL_LIMITS.dimensions;
  if (body.dimensions !== undefined && body.dimensions !== null) {
    const d = body.dimensions;
    if (typeof d !== "number" || !Number.isInteger(d) || d < MIN_DIMENSIONS || d > MULTIMODAL_LIMITS.dimensions) {
      throw invalidField("dimensions", `must be an integer from ${MIN_DIMENSIONS} to ${MULTIMODAL_LIMITS.dimensions}`);
    }
    dimensions = d;
  }
  const encoding = body.encoding_format ?? "float";
  if (encoding !== "float" && encoding !== "base64") throw invalidField("encoding_format", `must be "float" or "base64"`);
  const promptName = body.prompt_name ?? null;
  if (promptName !== null && promptName !== "query" && promptName !== "document") throw invalidField("prompt_name", `must be "query" or "document"`);
  if (body.user !== undefined && typeof body.user !== "string") throw invalidField("user", "must be a string");
  const prompt = promptName === null ? "" : MULTIMODAL_PROMPTS[promptName];

  const inputs: MultimodalInput[] = [];
  for (const [i, item] of raw.entries()) {
    const field = `input[${i}]`;
    if (typeof item === "string") {
      if (item === "") throw invalidField(field, "must not be empty");
      const text = prompt + item;
      const tokens = await runner.countTokens(text, signal);
      if (tokens > MULTIMODAL_LIMITS.textTokens) {
        throw invalidField(field, `is ${tokens} tokens${prompt ? ` with its ${promptName} prompt` : ""}; ${runner.id} reads at most ` +
          `${MULTIMODAL_LIMITS.textTokens} per text`);
      }
      inputs.push({kind: "text", text});
    } else if (isObj(item) && item.type === "image_url") {
      inputs.push(await readItemPicture(item, field));
    } else if (isObj(item) && item.type === "input_audio") {
      inputs.push(readClip(item, field));
    } else {
      throw invalidField(isObj(item) ? `${field}.type` : field, `must be ${ITEM_FORMS}`);
    }
  }
  return {inputs, dimensions, encoding};
}
