// Sampling from raw logits in JS, for requests that want log probabilities. The engine's native sampler
// only reports probabilities after its own chain (top-k, top-p, temperature), which are not the model's
// distribution; so when logprobs are asked for, the engine reads the raw logits of the top candidates and
// the full-vocabulary normaliser, reports exact log-softmax values, and picks the token here.
// Order of the chain as llama.cpp's: penalties, top-k, top-p, min-p, temperature, draw.

import type {SamplingParams} from "../core/generation.ts";

export interface Candidate {
  token: number;
  logit: number;
}

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same draws. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** OpenAI-style presence/frequency and llama.cpp-style multiplicative repeat penalty, over the candidates. */
export function penalize(cands: Candidate[], s: SamplingParams, recent: readonly number[]): Candidate[] {
  if (s.repeatPenalty === 1 && s.presencePenalty === 0 && s.frequencyPenalty === 0) return cands;
  const counts = new Map<number, number>();
  for (const t of recent) counts.set(t, (counts.get(t) ?? 0) + 1);
  return cands.map(({token, logit}) => {
    const n = counts.get(token) ?? 0;
    if (n === 0) return {token, logit};
    let l = logit;
    if (s.repeatPenalty !== 1) l = l > 0 ? l / s.repeatPenalty : l * s.repeatPenalty;
    l -= n * s.frequencyPenalty + s.presencePenalty;
    return {token, logit: l};
  });
}

/** Picks the next token from candidates (the top of the vocabulary by raw logit). Greedy at temperature 0. */
export function pickToken(candidates: readonly Candidate[], s: SamplingParams, random: () => number, recent: readonly number[]): number {
  let cands = penalize([...candidates], s, recent).sort((a, b) => b.logit - a.logit || a.token - b.token);
  if (cands.length === 0) throw new Error("no candidates to sample from");
  if (s.temperature <= 0) return cands[0]!.token;
  if (s.topK > 0) cands = cands.slice(0, s.topK);
  const max = cands[0]!.logit;
  let probs = cands.map((c) => Math.exp(c.logit - max));
  let sum = probs.reduce((a, b) => a + b, 0);
  probs = probs.map((p) => p / sum);
  if (s.topP < 1) {
    let acc = 0;
    let keep = 0;
    while (keep < probs.length && (keep === 0 || acc < s.topP)) acc += probs[keep++]!;
    cands = cands.slice(0, keep);
    probs = probs.slice(0, keep);
  }
  if (s.minP > 0) {
    const floor = probs[0]! * s.minP;
    const keep = Math.max(1, probs.filter((p) => p >= floor).length);
    cands = cands.slice(0, keep);
  }
  const weights = cands.map((c) => Math.exp((c.logit - max) / s.temperature));
  sum = weights.reduce((a, b) => a + b, 0);
  let r = random() * sum;
  for (let i = 0; i < cands.length; i++) {
    r -= weights[i]!;
    if (r < 0) return cands[i]!.token;
  }
  return cands[cands.length - 1]!.token;
}
