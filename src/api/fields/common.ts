// Request fields shared by the generation dialects: the token budget (three names, one field), sampling,
// stop strings. Their zod shapes and their decoding into the GenerationRequest vocabulary.

import {randomInt} from "node:crypto";
import {z} from "zod";
import {invalidRequest} from "../../core/errors.ts";
import type {SamplingParams} from "../../core/generation.ts";

export const BUDGET_ALIASES = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const;
export const MAX_STOP_STRINGS = 16;
export const MAX_STOP_LENGTH = 512;
export const MAX_STOP_TOKEN_IDS = 64;

const budget = z.number().int().min(1).nullish();
const seedField = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullish();

export const budgetFields = {
  max_tokens: budget,
  max_completion_tokens: budget,
  max_output_tokens: budget,
};

export const samplingFields = {
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_k: z.number().int().min(0).max(1_000_000).nullish(),
  min_p: z.number().min(0).max(1).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  repeat_penalty: z.number().min(0).max(10).nullish(),
  repeat_last_n: z.number().int().min(-1).max(1 << 20).nullish(),
  seed: seedField,
};

export const stopFields = {
  stop: z.union([
    z.string().min(1).max(MAX_STOP_LENGTH),
    z.array(z.string().min(1).max(MAX_STOP_LENGTH)).max(MAX_STOP_STRINGS),
  ]).nullish(),
  stop_token_ids: z.array(z.number().int().min(0)).max(MAX_STOP_TOKEN_IDS).nullish(),
};

export const streamFields = {
  stream: z.boolean().nullish(),
  stream_options: z.object({include_usage: z.boolean().nullish()}).nullish(),
  return_progress: z.boolean().nullish(),
};

type BudgetBody = {[K in (typeof BUDGET_ALIASES)[number]]?: number | null};

/**
 * The budget under any of its three names. Two names with different values are refused; a value above the
 * cap is refused where the route says so (chat, completions), or clamped where it says to run with the cap.
 */
export function resolveBudget(body: BudgetBody, cap: number, overCap: "refuse" | "clamp"): number | null {
  let value: number | null = null;
  let from: string | null = null;
  for (const name of BUDGET_ALIASES) {
    const v = body[name];
    if (v === undefined || v === null) continue;
    if (value !== null && v !== value) {
      throw invalidRequest(`${from} (${value}) and ${name} (${v}) are two names for the same token budget and disagree; send one of them`, name);
    }
    value = v;
    from = name;
  }
  if (value !== null && value > cap) {
    if (overCap === "clamp") return cap;
    throw invalidRequest(`${from}: ${value} is above this server's max_tokens_cap (${cap}); ask for at most ${cap}`, from!);
  }
  return value;
}

type SamplingBody = {[K in keyof typeof samplingFields]?: number | null};

export const DEFAULT_SAMPLING = {temperature: 1, topK: 40, topP: 1, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repeatPenalty: 1, repeatLastN: 64};

/**
 * OpenAI semantics (temperature 1, top_p 1) plus llama.cpp's top_k 40 by default, which costs nothing in quality and
 * saves a full-vocabulary sort per token. `defaults`: a served model's own (small generation), in their place.
 */
export function decodeSampling(body: SamplingBody, defaults: Partial<SamplingParams> = {}): SamplingParams {
  const d = {...DEFAULT_SAMPLING, ...defaults};
  return {
    temperature: body.temperature ?? d.temperature,
    topK: body.top_k ?? d.topK,
    topP: body.top_p ?? d.topP,
    minP: body.min_p ?? d.minP,
    // Always a concrete seed: the engine's own default is the clock in seconds.
    seed: body.seed != null ? Number(BigInt.asUintN(32, BigInt(body.seed))) : randomInt(0, 2 ** 32),
    presencePenalty: body.presence_penalty ?? d.presencePenalty,
    frequencyPenalty: body.frequency_penalty ?? d.frequencyPenalty,
    repeatPenalty: body.repeat_penalty ?? d.repeatPenalty,
    repeatLastN: body.repeat_last_n ?? d.repeatLastN,
  };
}

export function decodeStops(stop: string | string[] | null | undefined): string[] {
  if (stop == null) return [];
  return typeof stop === "string" ? [stop] : stop;
}

/** A feature another issue builds: refuse it clearly rather than ignore it. */
export function notYet(field: string, what: string): never {
  throw invalidRequest(`${field}: ${what} is not available in this build of the server (see GET /health)`, field);
}
