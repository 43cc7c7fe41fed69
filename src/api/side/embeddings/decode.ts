// POST /v1/embeddings body → what the embedding runner needs. Every refusal names the field and the rule.

import {invalidField} from "../../../core/errors.ts";
import {DEFAULT_QUERY_TASK, queryText} from "../../../side-models/embedding/runner.ts";

/** Inputs per request (OpenAI's own cap), so one request cannot hold the executor for minutes. */
export const MAX_EMBEDDING_INPUTS = 2048;
export const MIN_DIMENSIONS = 32;

export interface EmbeddingsRequest {
  model: unknown;
  /** The texts as the model reads them (the query form already applied). */
  texts: string[];
  /** null: the native size. */
  dimensions: number | null;
  encoding: "float" | "base64";
}

const KNOWN = new Set(["model", "input", "dimensions", "encoding_format", "prompt_name", "instruction", "user"]);
const TOKEN_IDS = "Input is text, not token ids";

function isTokenIds(v: unknown): boolean {
  return typeof v === "number" || (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "number"));
}

export function decodeEmbeddings(body: unknown, nativeDimensions: number): EmbeddingsRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw invalidField("body", "must be a JSON object");
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!KNOWN.has(k)) throw invalidField(k, `is not a field of POST /v1/embeddings (fields: ${[...KNOWN].join(", ")})`);
  if (typeof b.model !== "string" || b.model === "") throw invalidField("model", "is required (the id of a loaded embedding model)");

  const input = b.input;
  if (input === undefined || input === null) throw invalidField("input", "is required (a string or an array of strings)");
  if (isTokenIds(input)) throw invalidField("input", `${TOKEN_IDS}; send strings`);
  const raw = typeof input === "string" ? [input] : input;
  if (!Array.isArray(raw)) throw invalidField("input", "must be a string or an array of strings");
  if (raw.length === 0) throw invalidField("input", "must hold at least one string");
  if (raw.length > MAX_EMBEDDING_INPUTS) throw invalidField("input", `must hold at most ${MAX_EMBEDDING_INPUTS} strings`);
  raw.forEach((item, i) => {
    if (isTokenIds(item)) throw invalidField(`input[${i}]`, `${TOKEN_IDS}; send strings`);
    if (typeof item !== "string") throw invalidField(`input[${i}]`, "must be a string");
    if (item === "") throw invalidField(`input[${i}]`, "must not be empty");
  });

  let dimensions: number | null = null;
  if (b.dimensions !== undefined && b.dimensions !== null) {
    const d = b.dimensions;
    if (typeof d !== "number" || !Number.isInteger(d) || d < MIN_DIMENSIONS || d > nativeDimensions) {
      throw invalidField("dimensions", `must be an integer from ${MIN_DIMENSIONS} to ${nativeDimensions} (this model's vector size)`);
    }
    dimensions = d;
  }

  const fmt = b.encoding_format ?? "float";
  if (fmt !== "float" && fmt !== "base64") throw invalidField("encoding_format", `must be "float" or "base64"`);

  const promptName = b.prompt_name ?? null;
  if (promptName !== null && promptName !== "query" && promptName !== "document") throw invalidField("prompt_name", `must be "query" or "document"`);
  if (b.instruction !== undefined && b.instruction !== null) {
    if (typeof b.instruction !== "string" || b.instruction.trim() === "") {
      throw invalidField("instruction", "must be a non-empty string (the task line of a query)");
    }
    if (promptName !== "query") throw invalidField("instruction", `applies to queries only; send it with prompt_name "query"`);
  }
  if (b.user !== undefined && typeof b.user !== "string") throw invalidField("user", "must be a string");

  const task = typeof b.instruction === "string" ? b.instruction : DEFAULT_QUERY_TASK;
  const texts = (raw as string[]).map((t) => (promptName === "query" ? queryText(t, task) : t));
  return {model: b.model, texts, dimensions, encoding: fmt};
}
