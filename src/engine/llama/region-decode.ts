// One request's run on one region: the prompt fed in pieces that end at absolute multiples of the piece
// size (so how a prompt is cut never depends on batching or on what else runs), then token-by-token
// sampling with the library's native sampler chain. Cancellation is checked between pieces and between
// steps. Context overflow is never shifted: the caller fits the budget, and a backstop strategy throws.

import type {LlamaContextSequence, LlamaContextSequenceRepeatPenalty, SequenceEvaluateOptions, Token} from "node-llama-cpp";
import type {SamplingParams} from "../../core/generation.ts";
import type {DecodeEnd, DecodeJob, DecodeRun, DecodeStats} from "../engine.ts";

export class ContextOverflowError extends Error {
  constructor() {
    super("the region is full: no position left for another token");
  }
}

const neverShift = {
  strategy: (): never => {
    throw new ContextOverflowError();
  },
};

/** Cut points for prompt tokens [start, end): every piece ends at a multiple of `piece`, except the last. */
export function promptPieces(start: number, end: number, piece: number): [number, number][] {
  const out: [number, number][] = [];
  let a = start;
  while (a < end) {
    const b = Math.min(end, (Math.floor(a / piece) + 1) * piece);
    out.push([a, b]);
    a = b;
  }
  return out;
}

function samplerOptions(s: SamplingParams, generated: () => Token[]): SequenceEvaluateOptions {
  const penalize = s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0;
  let repeatPenalty: LlamaContextSequenceRepeatPenalty | undefined;
  if (penalize && s.repeatLastN !== 0) {
    repeatPenalty = {
      punishTokens: () => {
        const all = generated();
        return s.repeatLastN < 0 ? all : all.slice(-s.repeatLastN);
      },
      maxPunishTokens: s.repeatLastN < 0 ? 1 << 30 : s.repeatLastN,
      penalty: s.repeatPenalty,
      presencePenalty: s.presencePenalty,
      frequencyPenalty: s.frequencyPenalty,
    };
  }
  return {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    seed: s.seed,
    repeatPenalty,
    yieldEogToken: true,
    contextShift: neverShift,
  };
}

/** Told when the region is between two steps of generation, so the batch policy can wait for its step. */
export interface GeneratingMark {
  set(generating: boolean): void;
}

export async function* runOnRegion(seq: LlamaContextSequence, job: DecodeJob, piece: number, stats: DecodeStats, mark: GeneratingMark): DecodeRun {
  const started = performance.now();
  // node-llama-cpp brands token ids; ours are plain numbers checked at the edge.
  const prompt = job.prompt as Token[];
  stats.promptTokens = prompt.length;
  // No cross-request reuse yet (the prompt-cache issue adds it): start from an empty region.
  if (seq.nextTokenIndex > 0) await seq.clearHistory();
  stats.cachedTokens = 0;
  if (prompt.length === 0) throw new Error("empty prompt");

  const pieces = promptPieces(0, prompt.length, piece);
  const last = pieces.pop()!;
  yield {kind: "progress", processed: stats.cachedTokens, elapsedMs: 0};
  for (const [a, b] of pieces) {
    if (job.signal.aborted) return {reason: "cancelled"};
    await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(a, b), {contextShift: neverShift});
    yield {kind: "progress", processed: b, elapsedMs: performance.now() - started};
  }
  if (job.signal.aborted) return {reason: "cancelled"};

  const generated: Token[] = [];
  const gen = seq.evaluate(prompt.slice(last[0], last[1]), samplerOptions(job.sampling, () => generated));
  let firstTokenAt = 0;
  let end: DecodeEnd = {reason: "length"};
  try {
    while (generated.length < job.maxTokens) {
      let res: IteratorResult<Token, void>;
      try {
        res = await gen.next();
      } catch (err) {
        if (err instanceof ContextOverflowError) break; // backstop only: the budget is fitted before we start
        throw err;
      }
      if (res.done) break;
      const token: number = res.value;
      if (firstTokenAt === 0) {
        firstTokenAt = performance.now();
        stats.promptMs = firstTokenAt - started;
        yield {kind: "progress", processed: prompt.length, elapsedMs: stats.promptMs};
      }
      if (job.stopTokenIds.has(token)) {
        end = {reason: "stop_token", token};
        break;
      }
      generated.push(res.value);
      stats.predictedTokens = generated.length;
      stats.predictedMs = performance.now() - firstTokenAt;
      mark.set(generated.length < job.maxTokens);
      yield {kind: "token", token};
      if (job.signal.aborted) {
        end = {reason: "cancelled"};
        break;
      }
    }
  } finally {
    mark.set(false);
    await gen.return(undefined);
    if (firstTokenAt === 0) stats.promptMs = performance.now() - started;
    else stats.predictedMs = performance.now() - firstTokenAt;
  }
  return end;
}
