// Generation with log probabilities. Each step asks the library for the raw logits of the top candidates
// and the full-vocabulary normaliser Σ exp(logit − max) under a greedy chain (which adds nothing to the
// logits), so logprob(t) = logit_t − max − ln(Σ) is the model's own distribution, exactly. The token is
// then picked in JS (logit-sampler.ts) from those candidates: greedy at temperature 0, else seeded.

import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {pickToken, seededRandom, type Candidate} from "../logit-sampler.ts";
import type {DecodeEnd, DecodeItem, DecodeJob, DecodeStats, TokenScore} from "../engine.ts";
import type {GeneratingMark} from "./region-decode.ts";
import {ContextOverflowError, neverShift} from "./context-overflow.ts";

/** Candidates read per step when sampling with no top_k: enough to hold all but a negligible tail. */
export const SCORED_CANDIDATES = 256;

interface StepResult {
  candidates: Candidate[];
  logNormaliser: number;
}

async function scoreNext(seq: LlamaContextSequence, input: Token[], top: number): Promise<StepResult> {
  const last = input.length - 1;
  const items = input.map((t, i) => (i < last ? t : ([t, {
    generateNext: {token: true, totalLogitWeight: true, logits: {filter: {tokens: [], includeTop: top, includeSelected: true}}, options: {temperature: 0}},
  }] as const)));
  const out = await seq.controlledEvaluate(items as never, {contextShift: neverShift});
  const next = out[last]?.next;
  if (!next?.logits || next.totalLogitWeight === undefined) throw new Error("the engine returned no logits for the scored step");
  const candidates: Candidate[] = [];
  let max = -Infinity;
  for (const [token, logit] of next.logits) {
    candidates.push({token, logit});
    if (logit > max) max = logit;
  }
  return {candidates, logNormaliser: max + Math.log(next.totalLogitWeight)};
}

export async function* scoredGeneration(seq: LlamaContextSequence, firstInput: Token[], job: DecodeJob, stats: DecodeStats,
  mark: GeneratingMark, startedAt: number): AsyncGenerator<DecodeItem, DecodeEnd, void> {
  const {sampling} = job;
  const want = job.logprobs?.top ?? 0;
  const forSampling = sampling.temperature > 0 ? (sampling.topK > 0 ? sampling.topK : SCORED_CANDIDATES) : 1;
  const top = Math.max(1, want, forSampling);
  const random = seededRandom(sampling.seed);
  const generated: number[] = [];
  let input = firstInput;
  let firstTokenAt = 0;
  try {
    while (generated.length < job.maxTokens) {
      if (job.signal.aborted) return {reason: "cancelled"};
      let step: StepResult;
      try {
        step = await scoreNext(seq, input, top);
      } catch (err) {
        if (err instanceof ContextOverflowError) break;
        throw err;
      }
      const recent = sampling.repeatLastN < 0 ? generated : generated.slice(-sampling.repeatLastN);
      const token = pickToken(step.candidates, sampling, random, sampling.repeatLastN === 0 ? [] : recent);
      if (firstTokenAt === 0) {
        firstTokenAt = performance.now();
        stats.promptMs = firstTokenAt - startedAt;
        yield {kind: "progress", processed: job.prompt.length, elapsedMs: stats.promptMs};
      }
      if (job.stopTokenIds.has(token)) return {reason: "stop_token", token};
      const byLogit = [...step.candidates].sort((a, b) => b.logit - a.logit || a.token - b.token);
      const score: TokenScore = {
        logprob: step.candidates.find((c) => c.token === token)!.logit - step.logNormaliser,
        top: byLogit.slice(0, want).map((c) => ({token: c.token, logprob: c.logit - step.logNormaliser})),
      };
      generated.push(token);
      stats.predictedTokens = generated.length;
      stats.predictedMs = performance.now() - firstTokenAt;
      mark.set(generated.length < job.maxTokens);
      yield {kind: "token", token, score};
      input = [token as Token];
    }
    return {reason: "length"};
  } finally {
    mark.set(false);
    if (firstTokenAt === 0) stats.promptMs = performance.now() - startedAt;
    else stats.predictedMs = performance.now() - firstTokenAt;
  }
}
