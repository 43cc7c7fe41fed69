// The small model's engine as the generation pipeline sees it: the LlamaEngine on the side model's file,
// with every decode pass sent through the side executor ("the NPU runs one pass at a time"). A pass is one
// step of the decode run: one prompt piece evaluated, or one token generated. So a long small-generation
// reply never holds the device for its whole length: embedding, rerank or decision passes of other side
// models take their turn between two of its tokens, in arrival order.
//
// Wrapping the Engine interface (not region-decode.ts) keeps the main model's path untouched and
// catches every evaluation the pipeline starts: with the prompt cache off (see runner.ts) the region does
// no work outside a decode run (no reply seal), and acquire() only erases KV, which is not a pass.

import {EngineBusyError, type CutPlan, type DecodeEnd, type DecodeItem, type DecodeJob, type DecodeRun, type Engine,
  type RegionLease} from "../../engine/index.ts";
import type {SideExecutor} from "../executor.ts";

export class ExecutorGatedEngine implements Engine {
  constructor(private readonly inner: Engine, private readonly executor: SideExecutor, private readonly modelId: string) {}

  get info(): Engine["info"] {
    return this.inner.info;
  }

  tokenize(text: string, opts: {special: boolean}): number[] {
    return this.inner.tokenize(text, opts);
  }

  detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string {
    return this.inner.detokenize(tokens, opts);
  }

  prepareGrammar(grammar: {gbnf: string; key: string}): Promise<void> {
    return this.inner.prepareGrammar(grammar);
  }

  tokenBytes(token: number): Uint8Array {
    return this.inner.tokenBytes(token);
  }

  isValidToken(token: number): boolean {
    return this.inner.isValidToken(token);
  }

  planCuts(length: number, marks: Parameters<Engine["planCuts"]>[1]): CutPlan {
    return this.inner.planCuts(length, marks);
  }

  async acquire(opts: Parameters<Engine["acquire"]>[0]): Promise<RegionLease> {
    let lease: RegionLease;
    try {
      lease = await this.inner.acquire(opts);
    } catch (err) {
      // The side model has one region: waiting for it is waiting for the reply before to finish. The
      // engine's own wording ("all regions are busy") would point at the main model.
      if (err instanceof EngineBusyError) {
        throw new EngineBusyError(`${this.modelId} is answering another request and this one could not start within SVC_QUEUE_TIMEOUT ` +
          `(${opts.timeoutMs / 1000} s); retry later`, err.retryAfterS);
      }
      throw err;
    }
    const executor = this.executor;
    return {
      regionId: lease.regionId,
      stats: lease.stats,
      start: lease.start,
      decode: (job: DecodeJob) => gatedRun(lease.decode(job), executor, job.signal),
      release: (o) => lease.release(o),
    };
  }

  status(): ReturnType<Engine["status"]> {
    return this.inner.status();
  }

  cacheReport(): ReturnType<Engine["cacheReport"]> {
    return this.inner.cacheReport();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Each step of the inner run inside one executor pass. The inner run does its work only while it is asked
 * for its next item (the library's generator evaluates the last token when resumed), so nothing runs on
 * the model between two passes.
 */
export async function* gatedRun(inner: DecodeRun, executor: SideExecutor, signal: AbortSignal): DecodeRun {
  let started = false;
  try {
    for (;;) {
      let step: IteratorResult<DecodeItem, DecodeEnd>;
      try {
        // Only the first pass may be refused for waiting too long; later ones continue a reply under way.
        step = await executor.run(() => inner.next(), signal, {unbounded: started});
        started = true;
      } catch (err) {
        // A hang-up while the pass waited: the run ends as cancelled and the pipeline answers 499 for it.
        if (signal.aborted && !(err instanceof EngineBusyError)) return {reason: "cancelled"};
        throw err;
      }
      if (step.done) return step.value;
      yield step.value;
    }
  } finally {
    // Runs the inner run's own cleanup (it ends the library's generator; no evaluation happens there).
    await inner.return({reason: "cancelled"});
  }
}
