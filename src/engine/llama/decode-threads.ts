// How many threads a batch of decode steps runs on. Prompt pieces always get every engine thread (a piece is
// compute-bound and splits well); a one-token step of a small model is so short that node-llama-cpp's
// per-decode worker pool (created and joined for every llama_decode: the library attaches no persistent
// threadpool) can cost more than the second thread saves. `auto` times both at load and keeps the faster.

import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {SPLIT_ROW_FROM} from "../kv/row-classes.ts";

/** A batch is a prompt piece (every thread) when any item evaluates more than this many tokens; else decode steps. */
export const STEP_TOKENS = 2;

/**
 * Whether a one-token evaluation at `position` (a generated token's step, a one-token prompt piece) goes in a
 * dispatch of its own, on every thread. From SPLIT_ROW_FROM its row's attention can take the split path, whose
 * numbers depend on the thread count and which a row of a multi-sequence step never takes (kv/row-classes.ts);
 * so each such row always goes alone, on the same threads, two-threaded as llama-server runs a lone stream, and
 * its numbers never depend on what else was running. Below it every row takes the one-pass loop on any thread
 * count, alone or batched. Drafts stop before it (prompt-lookup.ts): a draft makes a step two rows.
 */
export function aloneOnEveryThread(position: number): boolean {
  return position >= SPLIT_ROW_FROM;
}

/** Threads for one dispatch: prompt pieces and a row that goes alone get every thread; batched steps the measured count. */
export function threadsForBatch(batch: {piece: boolean; aloneStep: boolean}, threads: {prompt: number; decode: number}): number {
  return batch.piece || batch.aloneStep ? threads.prompt : threads.decode;
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
