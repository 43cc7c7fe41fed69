// The side-model executor: the spec's "NPU runs one pass at a time". Every side-model pass (an embedding
// batch, one decision question, a rerank batch, a guard verdict, a small-generation request) runs through
// here, one after another in arrival order. Up to SVC_NPU_QUEUE passes wait "on the device"; the rest
// wait in the server and are answered slowly, not refused. A pass that cannot start within
// SVC_QUEUE_TIMEOUT fails with EngineBusyError (the API answers 503 engine_busy with Retry-After).
//
// Sharing with the main model: side passes and the main model's decodes run on the same cores and, with one
// libuv worker (UV_THREADPOOL_SIZE=1, which `npm start` sets for decode speed), on the same worker thread, one
// call after another. A side loop's long passes would then take most of that thread (measured: main decode at
// 0.29x with an embedding loop beside it). So while the main model is generating, each pass is followed by a
// pause as long as the pass (capped at MAX_PAUSE_MS): the side models get at most half the time, the main
// model at least half.

import {EngineBusyError, retryAfterSeconds} from "../engine/index.ts";

export interface ExecutorOptions {
  /** SVC_NPU_QUEUE: passes that may wait on the device itself. */
  queueLimit: number;
  /** SVC_QUEUE_TIMEOUT in ms: how long a pass may wait before it is refused. */
  timeoutMs: number;
  /** Whether the main model is running a request now (then passes are paced; see above). */
  mainBusy?: () => boolean;
}

/** Longest pause after a pass while the main model is busy. */
export const MAX_PAUSE_MS = 1000;

interface Waiter {
  start: () => void;
  fail: (err: unknown) => void;
  enqueuedAt: number;
}

export interface ExecutorStatus {
  running: boolean;
  /** Passes waiting on the device (at most SVC_NPU_QUEUE). */
  queued: number;
  /** Passes waiting in the server beyond SVC_NPU_QUEUE. */
  waitingInServer: number;
  longestWaitS: number;
  passes: number;
  refused: number;
}

export class SideExecutor {
  private busy = false;
  private readonly waiting: Waiter[] = [];
  private passes = 0;
  private refused = 0;

  constructor(private readonly opts: ExecutorOptions) {}

  /**
   * Runs one pass when the device is free. `signal` withdraws a waiting pass (client hang-up). A pass
   * that continues work already under way (the next step of a reply being streamed) is `unbounded`: the
   * queue timeout is for requests that cannot start, not for answers half sent.
   */
  async run<T>(pass: () => Promise<T>, signal?: AbortSignal, opts: {unbounded?: boolean} = {}): Promise<T> {
    await this.acquire(signal, opts.unbounded ?? false);
    const started = performance.now();
    try {
      this.passes++;
      return await pass();
    } finally {
      const took = performance.now() - started;
      // libuv counts whole milliseconds from the loop's cached clock, which can fire a fractional delay up to
      // ~2 ms early: round up and add one so the pause is never shorter than the pass.
      if (this.opts.mainBusy?.()) setTimeout(() => this.release(), Math.ceil(Math.min(took, MAX_PAUSE_MS)) + 1);
      else this.release();
    }
  }

  /** Whether the main model is generating now (a pass may then choose to use fewer threads). */
  mainIsBusy(): boolean {
    return this.opts.mainBusy?.() ?? false;
  }

  status(): ExecutorStatus {
    const n = this.waiting.length;
    const oldest = this.waiting[0];
    return {
      running: this.busy,
      queued: Math.min(n, this.opts.queueLimit),
      waitingInServer: Math.max(0, n - this.opts.queueLimit),
      longestWaitS: oldest ? (performance.now() - oldest.enqueuedAt) / 1000 : 0,
      passes: this.passes,
      refused: this.refused,
    };
  }

  private acquire(signal: AbortSignal | undefined, unbounded: boolean): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
    if (!this.busy && this.waiting.length === 0) {
      this.busy = true;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {enqueuedAt: performance.now(), start: () => {
        cleanup();
        resolve();
      }, fail: (err) => {
        cleanup();
        reject(err);
      }};
      const timer = unbounded ? undefined : setTimeout(() => {
        this.remove(waiter);
        this.refused++;
        waiter.fail(new EngineBusyError(
          `the side-model executor is busy and this request could not start within SVC_QUEUE_TIMEOUT (${this.opts.timeoutMs / 1000} s); retry later`,
          retryAfterSeconds(this.opts.timeoutMs)));
      }, this.opts.timeoutMs);
      const onAbort = () => {
        this.remove(waiter);
        waiter.fail(signal!.reason ?? new Error("aborted"));
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      signal?.addEventListener("abort", onAbort, {once: true});
      this.waiting.push(waiter);
    });
  }

  private remove(waiter: Waiter): void {
    const i = this.waiting.indexOf(waiter);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next.start();
    else this.busy = false;
  }
}
