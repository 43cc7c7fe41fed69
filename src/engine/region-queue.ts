// Region leases and the wait queue. Active requests always take the lowest free region id so they stay
// on low, contiguous ids: llama.cpp only merges consecutive sequence ids into one compute pass.
// Waiters are served strictly in arrival order; one that cannot start within its timeout gets EngineBusyError.

import {EngineBusyError, EngineCancelledError, retryAfterSeconds} from "./errors.ts";

interface Waiter {
  since: number;
  grant: (regionId: number) => void;
  fail: (err: Error) => void;
}

export class RegionQueue {
  private readonly busy: boolean[];
  private readonly waiters: Waiter[] = [];

  constructor(regions: number, private readonly now: () => number = () => performance.now()) {
    this.busy = new Array<boolean>(regions).fill(false);
  }

  get size(): number {
    return this.busy.length;
  }

  isBusy(id: number): boolean {
    return this.busy[id] === true;
  }

  get queued(): number {
    return this.waiters.length;
  }

  longestWaitS(): number {
    const first = this.waiters[0];
    return first ? (this.now() - first.since) / 1000 : 0;
  }

  /** `choose` picks among the free ids (ascending) when one is free at once; default the lowest. */
  acquire(opts: {signal: AbortSignal; timeoutMs: number; choose?: (free: number[]) => number}): Promise<number> {
    if (opts.signal.aborted) return Promise.reject(clientLeft());
    if (this.waiters.length === 0) {
      const free = this.freeIds();
      if (free.length > 0) {
        const picked = opts.choose ? opts.choose(free) : free[0]!;
        const id = free.includes(picked) ? picked : free[0]!;
        this.busy[id] = true;
        return Promise.resolve(id);
      }
    }
    return new Promise<number>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        opts.signal.removeEventListener("abort", onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        since: this.now(),
        grant: (id) => {
          cleanup();
          resolve(id);
        },
        fail: (err) => {
          cleanup();
          reject(err);
        },
      };
      const timer = setTimeout(() => waiter.fail(busyError(opts.timeoutMs)), opts.timeoutMs);
      const onAbort = () => waiter.fail(clientLeft());
      opts.signal.addEventListener("abort", onAbort, {once: true});
      this.waiters.push(waiter);
    });
  }

  /** Marks a free region busy without a request (a remote replica that went down parks its slots); false when it is busy. */
  take(id: number): boolean {
    if (this.busy[id] !== false) return false;
    this.busy[id] = true;
    return true;
  }

  /** Hands the region straight to the first waiter. (While anyone waits, every region is busy.) */
  release(id: number): void {
    if (!this.busy[id]) return;
    const next = this.waiters[0];
    if (next) next.grant(id);
    else this.busy[id] = false;
  }

  private freeIds(): number[] {
    const out: number[] = [];
    this.busy.forEach((b, i) => {
      if (!b) out.push(i);
    });
    return out;
  }
}

function busyError(timeoutMs: number): EngineBusyError {
  const seconds = retryAfterSeconds(timeoutMs);
  return new EngineBusyError(`all regions are busy and the request could not start within SVC_QUEUE_TIMEOUT (${seconds} s); retry later`, seconds);
}

function clientLeft(): EngineCancelledError {
  return new EngineCancelledError("the client closed the connection while the request waited for a region");
}
