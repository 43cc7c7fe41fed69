// Where a request runs and what it starts from. Pure: the engine hands in the regions, the prompt and the
// stored states; this decides; the engine carries it out (copy, move, load, erase).
//
// Rules, in order:
// - The request runs on an idle region that keeps the busy regions contiguous (`pickTarget`): llama.cpp
//   merges only consecutive sequence ids into one compute pass. Among those, the one that already holds
//   the most of the prompt wins (no copy needed); otherwise the lowest.
// - It starts from whatever serves the most of its prompt exactly: the target itself, another idle region
//   (copied into the target: "relocated"), the settled part of a busy one (a request evaluating the same
//   system prompt: llama/shared-prefill.ts), or a state file (disk tier or a session handle).
// - A held conversation is not lost just because it sat on the region a copy or a load goes into: it is
//   first moved to an empty or older idle region. When a request extends the state its region holds but
//   departs from it partway, the rest is dropped (the conversation moved on).
// - Why it reused less than it could have is reported as a miss reason.

import type {MissReason} from "../../core/engine-report.ts";
import {exactLength, reusable, type CutPlan, type RegionMemory} from "./region-memory.ts";

export interface RegionView {
  id: number;
  busy: boolean;
  /** Busy, but its exact part is settled and may be copied (a request running on it only appends). */
  copyable?: boolean;
  memory: RegionMemory;
}

/** A stored state the request could start from. */
export interface StateCandidate<T = unknown> {
  tokens: readonly number[];
  cuts: readonly number[];
  origin: "disk" | "handle";
  ref: T;
}

export type Source<T = unknown> =
  | {kind: "none"}
  | {kind: "region"; id: number}
  | {kind: "state"; state: StateCandidate<T>};

export interface Placement<T = unknown> {
  target: number;
  source: Source<T>;
  /** Prompt tokens served from the source. */
  reuse: number;
  /** Copy the target's held state here before anything else (its last user would otherwise lose it). */
  moveAsideTo: number | null;
  /** Regions whose exact state this placement overwrites (the disk tier may save them first). */
  overwritten: number[];
  /** The target held this conversation's earlier state and the request departs from it partway. */
  dropped: boolean;
  miss: {reason: MissReason; at?: number} | null;
  /** The prompt resumed inside the reply sealed in its source (an edited or continued last message). */
  rewroteLastMessage: boolean;
  /** Only a busy region held a longer prefix, and the request started cold. */
  coldResort: boolean;
}

export interface PlaceInput<T> {
  regions: readonly RegionView[];
  /** The region the request will run on (the lowest idle id, or the one a waiter was granted). */
  target: number;
  prompt: readonly number[];
  plan: CutPlan;
  states: readonly StateCandidate<T>[];
  /** Recently overwritten states that are gone (for the "evicted" reason). */
  evicted: readonly {tokens: readonly number[]; cuts: readonly number[]}[];
  cacheOn: boolean;
  /** A stored state must beat memory by this many tokens to be worth reading from disk. */
  stateMargin: number;
  /** Another region's prefix is copied in only when it serves at least this many tokens. */
  minCopy: number;
}

export function place<T>(input: PlaceInput<T>): Placement<T> {
  const {regions, target, prompt, plan} = input;
  const base: Placement<T> = {target, source: {kind: "none"}, reuse: 0, moveAsideTo: null, overwritten: [], dropped: false, miss: null,
    rewroteLastMessage: false, coldResort: false};
  const targetView = regions.find((r) => r.id === target);
  if (!targetView) throw new Error(`placement: no region ${target}`);
  if (!input.cacheOn) return {...base, miss: {reason: "cache_off"}};

  // The best idle (or copyable busy) region; ties go to the target (no copy), then to the lower id.
  let best = targetView;
  let bestReuse = reusable(targetView.memory, prompt, plan);
  for (const r of regions) {
    if ((r.busy && !r.copyable) || r.id === target) continue;
    const u = reusable(r.memory, prompt, plan);
    // A copy moves the whole region buffer; below minCopy tokens recomputing is as cheap.
    if (u.length > bestReuse.length && u.length >= input.minCopy) {
      best = r;
      bestReuse = u;
    }
  }
  let source: Source<T> = bestReuse.length > 0 ? {kind: "region", id: best.id} : {kind: "none"};
  let reuse = bestReuse.length;
  let sourceTokens: readonly number[] = best.memory.tokens;
  let sourceExact = exactLength(best.memory);
  let common = bestReuse.common;
  for (const s of input.states) {
    const u = reusable(s, prompt, plan);
    if (u.length > reuse + input.stateMargin || (u.length > 0 && source.kind === "none")) {
      source = {kind: "state", state: s};
      reuse = u.length;
      sourceTokens = s.tokens;
      sourceExact = exactLength(s);
      common = u.common;
    }
  }

  // The target's own exact state is lost unless the request extends it in place.
  const targetExact = exactLength(targetView.memory);
  const inPlace = source.kind === "region" && source.id === target;
  const targetLoses = targetExact > 0 && !(inPlace && reuse >= targetExact);
  let moveAsideTo: number | null = null;
  const overwritten: number[] = [];
  let dropped = false;
  if (targetLoses && inPlace) {
    // A follow-up (it repeats the history the held reply answered) left the rest of its own conversation
    // behind: dropped. Any other prompt that shares only a prefix evicts the held state.
    const replyStart = targetView.memory.replyStart;
    if (replyStart > 0 && bestReuse.common >= replyStart) dropped = true;
    else overwritten.push(target);
  } else if (targetLoses) {
    const sourceId = source.kind === "region" ? source.id : -1;
    const victim = leastRecentlyUsedIdle(regions, [target, sourceId]);
    if (victim && (exactLength(victim.memory) === 0 || victim.memory.lastUsed < targetView.memory.lastUsed)) {
      moveAsideTo = victim.id;
      if (exactLength(victim.memory) > 0) overwritten.push(victim.id);
    } else if (!inPlace) {
      overwritten.push(target);
    }
  }

  // Why less was reused than could have been.
  let miss: Placement["miss"] = null;
  let coldResort = false;
  const busyBest = Math.max(0, ...regions.filter((r) => r.busy && !r.copyable).map((r) => reusable(r.memory, prompt, plan).length));
  const evictedBest = Math.max(0, ...input.evicted.map((e) => reusable(e, prompt, plan).length));
  if (busyBest > reuse) {
    miss = {reason: "region_busy"};
    coldResort = reuse === 0;
  } else if (evictedBest > reuse) {
    miss = {reason: "evicted"};
  } else if (reuse > 0 && common < sourceExact) {
    miss = {reason: "diverged", at: common};
  } else if (reuse === 0) {
    miss = {reason: "cold"};
  }
  const replyStart = source.kind === "region" ? best.memory.replyStart : 0;
  const rewroteLastMessage = reuse > 0 && replyStart > 0 && common > replyStart && common < sourceTokens.length;
  return {target, source, reuse, moveAsideTo, overwritten, dropped, miss, rewroteLastMessage, coldResort};
}

/**
 * The region a new request should run on, among the free ones: one next to the busy regions (any, when
 * none is busy) so the active set stays one contiguous run of ids; among those, one whose whole held state
 * the prompt extends, else an empty one, else the least recently used. When no free region touches the
 * busy run, the lowest free one.
 */
export function pickTarget(free: readonly number[], busy: readonly number[], memories: readonly RegionMemory[], prompt: readonly number[],
  plan: CutPlan, cacheOn: boolean): number {
  const sorted = [...free].sort((a, b) => a - b);
  let allowed = sorted;
  if (busy.length > 0) {
    const lo = Math.min(...busy);
    const hi = Math.max(...busy);
    const contiguous = (id: number) => {
      const all = [...busy, id].sort((a, b) => a - b);
      return all.every((x, i) => i === 0 || x === all[i - 1]! + 1);
    };
    allowed = sorted.filter((id) => (id === lo - 1 || id === hi + 1 || (id > lo && id < hi)) && contiguous(id));
    if (allowed.length === 0) allowed = sorted.filter((id) => id === lo - 1 || id === hi + 1);
    if (allowed.length === 0) allowed = sorted.slice(0, 1);
  }
  if (!cacheOn) return allowed[0]!;
  // A region whose whole held state the prompt extends: run there, nothing is lost.
  let best = -1;
  let bestReuse = 0;
  for (const id of allowed) {
    const memory = memories[id]!;
    const u = reusable(memory, prompt, plan).length;
    if (u > bestReuse && u >= exactLength(memory)) {
      best = id;
      bestReuse = u;
    }
  }
  if (best >= 0) return best;
  // Otherwise take an empty region, else evict the least recently used state; a shared prefix held
  // elsewhere (a system message, the part of a conversation before an edit) is copied in by place().
  const empty = allowed.find((id) => exactLength(memories[id]!) === 0);
  if (empty !== undefined) return empty;
  return allowed.reduce((a, b) => (memories[b]!.lastUsed < memories[a]!.lastUsed ? b : a));
}

function leastRecentlyUsedIdle(regions: readonly RegionView[], exclude: number[]): RegionView | null {
  let pick: RegionView | null = null;
  for (const r of regions) {
    if (r.busy || exclude.includes(r.id)) continue;
    const empty = exactLength(r.memory) === 0;
    if (!pick) {
      pick = r;
      continue;
    }
    const pickEmpty = exactLength(pick.memory) === 0;
    if (empty && !pickEmpty) pick = r;
    else if (empty === pickEmpty && r.memory.lastUsed < pick.memory.lastUsed) pick = r;
  }
  return pick;
}
