// POST /v1/audio/transcriptions in OpenAI's shape (multipart): a WAV recording in, its text out, as json
// ({text, usage}), text, verbose_json (language, duration, segments with times), srt or vtt. The spec's
// limit is 20 minutes or 25 MiB, whichever comes first; both are named when either is passed.

import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import multipart from "@fastify/multipart";
import {ApiError, invalidField} from "../../../core/errors.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import {languageName, whisperLanguage} from "../../../side-models/speech/languages.ts";
import type {SpeechRunner, Transcript} from "../../../side-models/speech/runner.ts";
import {decodeWavMono16k, readWavInfo, WavError} from "../../../media/wav.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";

export const TRANSCRIPTION_LIMITS = {maxBytes: 25 * 1024 * 1024, maxSeconds: 20 * 60} as const;
export const RESPONSE_FORMATS = ["json", "text", "verbose_json", "srt", "vtt"] as const;
type ResponseFormat = (typeof RESPONSE_FORMATS)[number];

const LIMITS_TEXT = "recordings are limited to 20 minutes or 25 MiB, whichever comes first";
/** Text fields are short; a bound keeps a stray upload in a text field from filling memory. */
const MAX_FIELD_BYTES = 64 * 1024;

export interface TranscriptionRequest {
  audio: Buffer;
  model: string | undefined;
  language: string | null;
  prompt: string;
  format: ResponseFormat;
}

/** Reads the multipart body, refusing what cannot be served with the field and the rule. */
async function readRequest(req: FastifyRequest): Promise<TranscriptionRequest> {
  if (!req.isMultipart()) throw invalidField("body", "must be multipart/form-data with a file field holding a WAV recording");
  const fields: Record<string, string> = {};
  let audio: Buffer | undefined;
  try {
    audio = await readParts(req, fields);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    // busboy's own errors are about the client's bytes: no boundary, a body cut short, a malformed header.
    throw invalidField("body", `is not valid multipart/form-data (${(e as Error).message}); send the recording as the file field of a multipart form`);
  }
  if (fields.stream !== undefined && fields.stream !== "false") {
    throw invalidField("stream", "transcriptions are not streamed; leave stream out or send false");
  }
  const format = (fields.response_format ?? "json") as ResponseFormat;
  if (!RESPONSE_FORMATS.includes(format)) throw invalidField("response_format", `must be one of ${RESPONSE_FORMATS.join(", ")}`);
  let language: string | null = null;
  if (fields.language !== undefined && fields.language.trim() !== "") {
    language = whisperLanguage(fields.language);
    if (!language) {
      throw invalidField("language", `"${fields.language.slice(0, 40)}" is not a language the speech model knows; ` +
        "send a two-letter code such as en or a name such as english, or leave it out to detect it");
    }
  }
  if (fields.temperature !== undefined) {
    const t = Number(fields.temperature);
    if (!Number.isFinite(t) || t < 0 || t > 1) throw invalidField("temperature", "must be a number from 0 to 1");
  }
  if (fields.timestamp_granularities !== undefined && fields.timestamp_granularities !== "segment") {
    throw invalidField("timestamp_granularities", "only segment timestamps are given (in verbose_json)");
  }
  if (!audio) throw invalidField("file", "is required: a WAV recording (PCM 8 to 32-bit or float, any sample rate, any channels)");
  return {audio, model: fields.model, language, prompt: fields.prompt ?? "", format};
}

/** The form's parts: text fields into `fields`, the recording returned. */
async function readParts(req: FastifyRequest, fields: Record<string, string>): Promise<Buffer | undefined> {
  let audio: Buffer | undefined;
  for await (const part of req.parts()) {
    if (part.type === "file") {
      if (part.fieldname !== "file") {
        await part.toBuffer().catch(() => undefined);
        throw invalidField(part.fieldname, "is not a file field of this route; send the recording as file");
      }
      const buf = await part.toBuffer().catch((e: unknown) => {
        if ((e as {code?: string}).code === "FST_REQ_FILE_TOO_LARGE") return null;
        throw e;
      });
      if (buf === null || part.file.truncated) {
        throw invalidField("file", `is larger than 25 MiB; ${LIMITS_TEXT}`);
      }
      audio = buf;
    } else {
      if (part.valueTruncated) throw invalidField(part.fieldname, `is longer than ${MAX_FIELD_BYTES} bytes`);
      fields[part.fieldname.replace(/\[\]$/, "")] = String(part.value);
    }
  }
  return audio;
}

/** Header checks before any decoding: the format, then the length. */
function checkAudio(audio: Buffer): void {
  let info;
  try {
    info = readWavInfo(audio);
  } catch (e) {
    if (e instanceof WavError) throw invalidField("file", e.message);
    throw e;
  }
  if (info.durationS > TRANSCRIPTION_LIMITS.maxSeconds) {
    throw invalidField("file", `the recording is ${clock(info.durationS)} long; ${LIMITS_TEXT}`);
  }
}

function clock(s: number): string {
  const m = Math.floor(s / 60);
  const rest = s - m * 60;
  return `${m} min ${Number.isInteger(rest) ? rest : rest.toFixed(2)} s`;
}

function stamp(s: number, sep: "," | "."): string {
  const ms = Math.round(s * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(Math.floor(ms / 3600000))}:${pad(Math.floor(ms / 60000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${sep}${pad(ms % 1000, 3)}`;
}

function render(t: Transcript, format: ResponseFormat): {type: string; body: unknown} {
  const seconds = Math.ceil(t.durationS);
  switch (format) {
    case "json": return {type: "application/json", body: {text: t.text, usage: {type: "duration", seconds}}};
    case "text": return {type: "text/plain; charset=utf-8", body: t.text + "\n"};
    case "verbose_json": return {type: "application/json", body: {
      task: "transcribe", language: t.language ? languageName(t.language) : null, duration: Math.round(t.durationS * 1000) / 1000, text: t.text,
      // whisper.cpp gives each segment's text and times; OpenAI's per-segment scores are not computed, so they are left out.
      segments: t.segments.map((s) => ({id: s.id, seek: s.seek, start: s.start, end: s.end, text: s.text, tokens: [], temperature: 0})),
      usage: {type: "duration", seconds},
    }};
    case "srt": return {type: "text/plain; charset=utf-8",
      body: t.segments.map((s, i) => `${i + 1}\n${stamp(s.start, ",")} --> ${stamp(s.end, ",")}\n${s.text}\n`).join("\n")};
    case "vtt": return {type: "text/vtt; charset=utf-8",
      body: `WEBVTT\n\n${t.segments.map((s) => `${stamp(s.start, ".")} --> ${stamp(s.end, ".")}\n${s.text}\n`).join("\n")}`};
  }
}

export function registerTranscriptionRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  // Multipart is parsed in this route's scope only; every other route keeps its JSON-only body parser.
  void app.register(async (scope) => {
    await scope.register(multipart, {limits: {fileSize: TRANSCRIPTION_LIMITS.maxBytes, files: 1, fields: 32, fieldSize: MAX_FIELD_BYTES},
      throwFileSizeLimit: true});
    // The server's body limit (SVC_BODY_LIMIT_MB) is for JSON; here the multipart limit above refuses a file over
    // 25 MiB with the spec's message, and the body may hold one such file plus its fields.
    scope.post("/v1/audio/transcriptions", {bodyLimit: 2 * TRANSCRIPTION_LIMITS.maxBytes}, async (req: FastifyRequest, reply: FastifyReply) => {
      const request = await readRequest(req);
      const runner = side.pick<SpeechRunner>("speech", request.model, {anyName: () => true});
      checkAudio(request.audio);
      let samples: Float32Array;
      try {
        samples = decodeWavMono16k(request.audio);
      } catch (e) {
        if (e instanceof WavError) throw invalidField("file", e.message);
        throw e;
      }
      const abort = hangUpSignal(req, reply);
      const started = performance.now();
      const transcript = await runner.transcribe(samples, {language: request.language, prompt: request.prompt, signal: abort.signal});
      deps.counters.transcriptions++;
      deps.counters.transcribedAudioSeconds += transcript.durationS;
      deps.logger.info("transcription", {model: runner.id, audio_s: Math.round(transcript.durationS * 100) / 100, windows: transcript.windows,
        language: transcript.language, ms: Math.round(performance.now() - started)});
      const out = render(transcript, request.format);
      return reply.type(out.type).send(out.body);
    });
  });
}
