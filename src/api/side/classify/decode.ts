// POST /classify body (vLLM's classification shape) → token lists for the classifier runner.

import type {Token} from "../../../engine/index.ts";
import {invalidField} from "../../../core/errors.ts";

export const MAX_CLASSIFY_INPUTS = 2048;

export interface ClassifyRequest {
  model: unknown;
  /** Each input: text to tokenize, or token ids used as sent. */
  inputs: ({text: string} | {ids: Token[]})[];
  useActivation: boolean;
  /** Keep at most this many tokens of each input (-1: the model's limit); null: no truncation. */
  truncate: number | null;
  addSpecialTokens: boolean;
}

const KNOWN = new Set(["model", "input", "use_activation", "truncate_prompt_tokens", "add_special_tokens", "user", "priority", "request_id"]);

const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "number");

export function decodeClassify(body: unknown, limits: {inputLimit: number; vocabularySize: number}): ClassifyRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw invalidField("body", "must be a JSON object");
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!KNOWN.has(k)) throw invalidField(k, `is not a field of POST /classify (fields: ${[...KNOWN].join(", ")})`);
  if (typeof b.model !== "string" || b.model === "") throw invalidField("model", "is required (the directory name of a loaded classifier fine-tune)");

  const input = b.input;
  if (input === undefined || input === null) {
    throw invalidField("input", "is required (a string, an array of strings, token ids, or an array of token-id arrays)");
  }
  // One token-id array is one input; an array of strings or of id arrays is several.
  const items: unknown[] = typeof input === "string" || isIds(input) ? [input] : Array.isArray(input) ? input : [input];
  if (items.length === 0) throw invalidField("input", "must hold at least one input");
  if (items.length > MAX_CLASSIFY_INPUTS) throw invalidField("input", `must hold at most ${MAX_CLASSIFY_INPUTS} inputs`);
  const inputs: ClassifyRequest["inputs"] = items.map((item, i) => {
    const at = items.length === 1 && !Array.isArray(input) ? "input" : isIds(input) ? "input" : `input[${i}]`;
    if (typeof item === "string") {
      if (item === "") throw invalidField(at, "must not be empty");
      return {text: item};
    }
    if (isIds(item)) {
      item.forEach((id, j) => {
        if (!Number.isInteger(id) || id < 0 || id >= limits.vocabularySize) {
          throw invalidField(`${at}[${j}]`, `must be a token id from 0 to ${limits.vocabularySize - 1}`);
        }
      });
      return {ids: item as Token[]};
    }
    throw invalidField(at, "must be a non-empty string or a non-empty array of token ids");
  });

  const useActivation = b.use_activation ?? true;
  if (typeof useActivation !== "boolean") throw invalidField("use_activation", "must be a boolean");
  const addSpecialTokens = b.add_special_tokens ?? true;
  if (typeof addSpecialTokens !== "boolean") throw invalidField("add_special_tokens", "must be a boolean");
  let truncate: number | null = null;
  const t = b.truncate_prompt_tokens;
  if (t !== undefined && t !== null) {
    if (typeof t !== "number" || !Number.isInteger(t) || (t !== -1 && (t < 1 || t > limits.inputLimit))) {
      throw invalidField("truncate_prompt_tokens", `must be -1 (the model's limit) or an integer from 1 to ${limits.inputLimit}`);
    }
    truncate = t === -1 ? limits.inputLimit : t;
  }
  return {model: b.model, inputs, useActivation, truncate, addSpecialTokens};
}
