// Requests that start together on the same long prefix (three agents opening on one system prompt) would each
// evaluate it beside the others, each at a third of the speed, and finish together: the slowest way to get
// three copies. Instead the first one claims its prompt; a request whose prompt shares a long prefix with a
// claimed prompt, beyond what any idle region already holds, waits until the claiming region has evaluated
// that prefix and then copies it (the placement may copy from a busy region's exact part: placement.ts).
// The claim is made before the region is prepared, with no await between the check and the claim, so of two
// requests that arrive together exactly one evaluates.

import {exactLength, reusable, type CutPlan, type RegionMemory} from "../kv/region-memory.ts";

/** A shared prefix must save at least this many tokens over what idle regions hold to be worth waiting for. */
export const SHARE_MIN_TOKENS = 128;
/** How often a waiting request looks at the claiming region's progress. */
const POLL_MS = 15;

interface Claim {
  prompt: readonly number[];
  plan: CutPlan;
}

export interface PrefillView {
  id: number;
  busy: boolean;
  memory: RegionMemory;
}

export class SharedPrefill {
  private readonly claims = new Map<number, Claim>();
  /** Requests that waited for another region's prefill, and how long in all (for the cache report). */
  waits = 0;
  waitedS = 0;

  constructor(private readonly regions: () => readonly PrefillView[], private readonly cacheOn: boolean) {}

  /**
   * Waits while a busy region is evaluating a prompt that will give this one at least SHARE_MIN_TOKENS more than
   * any idle region holds, until that region's exact part covers the shared prefix (or it stops), then claims
   * this prompt for region `id`. Resolves early when `signal` aborts (the caller's queue handles that).
   */
  async claim(id: number, prompt: readonly number[], plan: CutPlan, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    let waited = false;
    while (this.cacheOn && !signal.aborted) {
      const awaited = this.worthWaitingFor(id, prompt, plan);
      if (awaited === null) break;
      waited = true;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    if (waited) {
      this.waits++;
      this.waitedS += (performance.now() - started) / 1000;
    }
    this.claims.set(id, {prompt, plan});
  }

  /** The region's prompt is evaluated, or the request ended: nobody should wait for it any more. */
  release(id: number): void {
    this.claims.delete(id);
  }

  /** The claimed region whose finished prefill would serve this prompt best, while it has not got there yet. */
  private worthWaitingFor(id: number, prompt: readonly number[], plan: CutPlan): number | null {
    const views = this.regions();
    let held = 0;
    for (const r of views) if (!r.busy || r.id === id) held = Math.max(held, reusable(r.memory, prompt, plan).length);
    let best: number | null = null;
    let bestShared = held + SHARE_MIN_TOKENS - 1;
    for (const r of views) {
      const claim = this.claims.get(r.id);
      if (!claim || !r.busy || r.id === id) continue;
      const shared = reusable({tokens: claim.prompt, cuts: claim.plan.cuts}, prompt, plan).length;
      if (shared > bestShared && exactLength(r.memory) < shared) {
        best = r.id;
        bestShared = shared;
      }
    }
    return best;
  }
}
