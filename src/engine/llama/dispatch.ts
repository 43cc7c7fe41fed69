// The engine's one batching hook into node-llama-cpp: which queued decodes go next (batch-strategy.ts) and on how
// many threads (decode-threads.ts), with the thread count of batched steps kept right while serving
// (decode-thread-tuner.ts). Called by the library before every dispatch.

import type {BatchItem, LlamaContext, LlamaContextSequence, PrioritizedBatchItem} from "node-llama-cpp";
import {chooseBatch, newBatchPolicyState} from "./batch-strategy.ts";
import {DecodeThreadTuner, type TunerSwitch} from "./decode-thread-tuner.ts";
import {aloneOnEveryThread, STEP_TOKENS, threadsForBatch} from "./decode-threads.ts";
import {queuedDecodes, setNextBatchThreads} from "./internals.ts";

export class Dispatcher {
  readonly policy = newBatchPolicyState();
  /** Threads for batches of steps; every thread until the engine measures (or is told) otherwise. */
  decodeThreads: number;
  private context: LlamaContext | undefined;
  private sequences: readonly LlamaContextSequence[] = [];
  private tuner: DecodeThreadTuner | null = null;
  /** The last batch of steps, being timed until the library calls again. */
  private timing: {threads: number; rows: number; at: number} | null = null;

  constructor(private readonly threads: number) {
    this.decodeThreads = threads;
  }

  /** The context and its regions (sequence id = index), once created: no dispatch comes before. */
  attach(context: LlamaContext, sequences: readonly LlamaContextSequence[]): void {
    this.context = context;
    this.sequences = sequences;
  }

  /** From now on, batched steps are timed and their thread count kept right (one or every thread). */
  tune(onSwitch: (change: TunerSwitch) => void): void {
    this.tuner = new DecodeThreadTuner([1, this.threads], this.decodeThreads, (change) => {
      this.decodeThreads = change.to;
      onSwitch(change);
    });
  }

  prioritize(items: readonly BatchItem[]): PrioritizedBatchItem[] {
    const now = performance.now();
    // Called again once the last dispatch is decoded and sampled: that interval is its time.
    if (this.timing) this.tuner?.observe(this.timing.threads, this.timing.rows, now - this.timing.at);
    this.timing = null;
    const queue = queuedDecodes(this.context!);
    // A one-token item is evaluated at its sequence's next position (a queued step, or one a generating sequence will queue).
    const alone = (seq: number) => aloneOnEveryThread(this.sequences[seq]?.nextTokenIndex ?? Infinity);
    const chosen = chooseBatch(items, queue, this.policy, undefined, alone);
    if (chosen.length === 0) return chosen;
    const piece = chosen.some((c) => c.processAmount > STEP_TOKENS);
    const aloneStep = !piece && chosen.length === 1 && alone(queue[items.indexOf(chosen[0]!.item)]?.sequenceId ?? -1);
    const stepBatch = !piece && !aloneStep;
    const decode = stepBatch && this.tuner ? this.tuner.next() : this.decodeThreads;
    const n = threadsForBatch({piece, aloneStep}, {prompt: this.threads, decode});
    setNextBatchThreads(this.context!, n);
    if (stepBatch && this.tuner) this.timing = {threads: n, rows: chosen.reduce((sum, c) => sum + c.processAmount, 0), at: now};
    return chosen;
  }
}
