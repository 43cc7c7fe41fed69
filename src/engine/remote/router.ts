// Which replica, and which of its slots, a request goes to. Pure: the engine hands in what it knows (each
// replica's health, load and how much of the prompt its prefix record holds; each free slot's last tokens).
//
// Prefix-aware: the replica holding the longest prefix of the prompt, so its prompt cache serves it, unless
// that replica has no free slot (overloaded): then the least loaded one, since waiting for the holder costs a
// whole reply while re-evaluating the prefix costs a prefill. A prefix counts only when it is at least half
// the prompt (as SGLang's cache-aware router does): every chat prompt shares its template's header, and
// following a few shared tokens would pile all new conversations onto one replica. Otherwise: the least loaded.

import type {RouteDecision} from "../engine.ts";
import {commonPrefix} from "../kv/region-memory.ts";

export type RoutingMode = "prefix" | "round-robin";

export interface ReplicaView {
  index: number;
  up: boolean;
  busy: number;
  /** Free slots' region ids. */
  free: number[];
  /** Prompt tokens the replica's prefix record holds. */
  expected: number;
}

export interface Route {
  replica: number;
  reason: RouteDecision["reason"];
  expected: number;
}

function leastLoaded(candidates: ReplicaView[], rotate: number): ReplicaView {
  // Ties go round the ring, so cold requests spread over equally idle replicas.
  const n = candidates.length;
  let best = candidates[rotate % n]!;
  for (let k = 1; k < n; k++) {
    const c = candidates[(rotate + k) % n]!;
    if (c.busy < best.busy) best = c;
  }
  return best;
}

/** Share of the prompt a replica must hold for its prefix to decide the route. */
export const PREFIX_SHARE = 0.5;

/**
 * Null when no live replica has a free slot (the caller waits). `rotate` advances per decision (round-robin's turn, ties).
 * `pinned`: the replica that holds the request's named session; it takes the request whenever it is up with a free slot,
 * in either mode (otherwise the request is routed as any other and starts without the session's state).
 */
export function chooseReplica(views: readonly ReplicaView[], mode: RoutingMode, rotate: number, promptLength: number,
  pinned: number | null = null): Route | null {
  const open = views.filter((v) => v.up && v.free.length > 0);
  if (open.length === 0) return null;
  const session = pinned === null ? undefined : open.find((v) => v.index === pinned);
  if (session) return {replica: session.index, reason: "session", expected: session.expected};
  if (mode === "round-robin") {
    const up = views.filter((v) => v.up);
    for (let k = 0; k < up.length; k++) {
      const v = up[(rotate + k) % up.length]!;
      if (v.free.length > 0) return {replica: v.index, reason: "round_robin", expected: v.expected};
    }
    return null;
  }
  let holder: ReplicaView | null = null;
  for (const v of views) {
    if (!v.up || v.expected === 0 || v.expected < PREFIX_SHARE * promptLength) continue;
    if (!holder || v.expected > holder.expected || (v.expected === holder.expected && v.busy < holder.busy)) holder = v;
  }
  if (holder && holder.free.length > 0) return {replica: holder.index, reason: "prefix", expected: holder.expected};
  const pick = leastLoaded(open, rotate);
  return {replica: pick.index, reason: holder ? "overloaded" : "least_loaded", expected: pick.expected};
}

export interface SlotView {
  region: number;
  /** Tokens the slot held after its last request. */
  held: readonly number[];
  lastUsed: number;
}

/** The free slot whose last tokens share the longest prefix with the prompt; ties: the least recently used (keeps recent conversations). */
export function chooseSlot(slots: readonly SlotView[], prompt: readonly number[]): SlotView {
  let best = slots[0]!;
  let bestLen = commonPrefix(best.held, prompt);
  for (const s of slots.slice(1)) {
    const len = commonPrefix(s.held, prompt);
    if (len > bestLen || (len === bestLen && s.lastUsed < best.lastUsed)) {
      best = s;
      bestLen = len;
    }
  }
  return best;
}
