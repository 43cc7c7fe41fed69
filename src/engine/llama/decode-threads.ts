// How many threads a batch of decode steps runs on. Prompt pieces always get every engine thread (a piece is
// compute-bound and splits well); a one-token step of a small model is so short that node-llama-cpp's
// per-decode worker pool (created and joined for every llama_decode: the library attaches no persistent
// threadpool) can cost more than the second thread saves. `auto` times both at load and keeps the faster.

import type {LlamaContextSequence, Token} from "node-llama-cpp";

/** A batch is a prompt piece (every thread) when any item evaluates more than this many tokens; else decode steps. */
export const STEP_TOKENS = 2;

/**
 * From this position on, a lone decode row runs on one thread. llama.cpp pads a stream's attention window to
 * multiples of 256 cells, and from 512 cells its CPU flash attention splits one query row's keys across the
 * threads and merges the partial sums, a different rounding from the one-pass loop that every prompt row and
 * every row of a multi-sequence step takes. On one thread the split has one part and its merge is exact, so a
 * reply computed alone matches the same reply computed beside others. (A margin below 256 keeps clear of the
 * padding rule's edge.)
 */
export const LONE_STEP_ONE_THREAD_FROM = 240;

/**
 * Threads for one dispatch: prompt pieces get every thread; decode steps the measured count, except when a
 * row will be alone in its ubatch at a long position (above). `lonePosition` is the highest position among
 * such rows (see loneSteps), -1 when there are none.
 */
export function threadsForBatch(batch: {piece: boolean; lonePosition: number}, threads: {prompt: number; decode: number}): number {
  if (batch.piece) return threads.prompt;
  if (batch.lonePosition >= LONE_STEP_ONE_THREAD_FROM) return 1;
  return threads.decode;
}

/**
 * The sequences of a batch of one-token steps that llama.cpp will compute alone in a ubatch: with one KV
 * stream per sequence it splits a batch into ubatches of consecutive sequence ids (split_equal, sequential),
 * so steps of sequences 0, 2 and 3 run as {0} and {2, 3}, and sequence 0's row is lone (a region that
 * finished leaves such a gap).
 */
export function loneSteps(sequenceIds: readonly number[]): number[] {
  const ids = [...new Set(sequenceIds)].sort((a, b) => a - b);
  return ids.filter((id, i) => ids[i - 1] !== id - 1 && ids[i + 1] !== id + 1);
}

export interface ThreadsChoice {
  /** Threads for batches of decode steps. */
  decode: number;
  /** Fastest step time (ms) per candidate thread count, as measured; empty when not measured. */
  measuredMs: Record<number, number>;
}

/**
 * Times greedy generation (decode step plus sampling, as requests run it) on `candidates` thread counts,
 * interleaved, after `context` is evaluated; `setThreads` makes the next steps run on that many. A bare step
 * without sampling misleads: measured here, two threads made a bare step faster (7.6 against 11.3 ms) and
 * generation slower. Per candidate, the fastest of `reps` runs of `steps` tokens wins (noise only adds).
 */
export async function measureDecodeThreads(seq: LlamaContextSequence, context: readonly number[], candidates: number[],
  setThreads: (n: number) => void, reps = 2, steps = 6): Promise<ThreadsChoice> {
  const prompt = context as Token[];
  await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  const start = seq.nextTokenIndex;
  const best: Record<number, number> = {};
  try {
    for (let r = -1; r < reps; r++) { // r = -1 warms up, on the first candidate only
      for (const n of r < 0 ? candidates.slice(0, 1) : candidates) {
        setThreads(n);
        let first = 0;
        let count = 0;
        for await (const _ of seq.evaluate(prompt.slice(-1), {temperature: 0, yieldEogToken: true})) {
          if (count === 0) first = performance.now();
          if (++count > steps) break;
        }
        const perToken = (performance.now() - first) / steps;
        if (r >= 0) best[n] = Math.min(best[n] ?? Infinity, perToken);
        await seq.eraseContextTokenRanges([{start, end: seq.nextTokenIndex}]);
      }
    }
  } finally {
    await seq.clearHistory();
  }
  const decode = candidates.reduce((a, b) => (best[b]! < best[a]! ? b : a));
  return {decode, measuredMs: best};
}
