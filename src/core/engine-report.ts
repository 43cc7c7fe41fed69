// What the engine reports and observability reads: the prompt cache's and the region pool's accounts, a
// request's phases inside the engine, and why a remote replica was chosen. The engine keeps these numbers; /cache
// shows them as the spec's table, /metrics exports them, and neither ever waits on the engine to read them. They
// live in core so that observability reads them without importing the engine.

/**
 * Why the remote engine's router sent a request to the replica it chose. prefix: it held the longest prefix;
 * overloaded: the one that did had no free slot; least_loaded: no replica held any; round_robin:
 * SVC_ROUTING=round-robin; waited: no slot was free and this one freed first; failover: the first one died;
 * session: a named session's replica (X-Svc-From), where its state is.
 */
export type RouteReason = "prefix" | "overloaded" | "least_loaded" | "round_robin" | "waited" | "failover" | "session";

/**
 * A request's time inside the engine, beside promptMs (its prompt's evaluation) and predictedMs (first token to
 * last): waiting in the queue for a region, preparing the region (copies, state loads, waiting for a seal),
 * decode steps waiting for their batch to be dispatched, and decode steps in the engine (batch wait, compute,
 * sampling); predictedMs minus engineMs is the time between steps spent outside it (pipeline, SSE writes).
 */
export interface EnginePhases {
  queueMs: number;
  prepareMs: number;
  batchWaitMs: number;
  engineMs: number;
}

/** Why a request reused less of its prompt than it could have. */
export type MissReason =
  /** Nothing held anywhere shares a prefix with the prompt (a first request). */
  | "cold"
  /** SVC_PROMPT_CACHE=0. */
  | "cache_off"
  /** A region that held a longer prefix was busy with another request. */
  | "region_busy"
  /** The prefix was held once but its region was taken over by another conversation (and not on disk). */
  | "evicted"
  /** The best region held the prompt's history but the prompt departs from it at token k. */
  | "diverged";

export const MISS_REASONS: readonly MissReason[] = ["cold", "cache_off", "region_busy", "evicted", "diverged"];

export interface PoolReport {
  /** Positions of every region together (regions × positions per region). */
  positions: number;
  /** Positions holding KV now (busy and held regions). */
  used: number;
  usage_ratio: number;
  busy_regions: number;
  held_regions: number;
  /** Budgets cut down to the room left in a region. */
  room_clamped: number;
  /** Held conversations moved to another region to make room at a low id. */
  moved: number;
  /** Held entries dropped by a follow-up that took over their region (the follow-up extended them). */
  dropped: number;
  /** Requests waiting for a region now. */
  waiting_for_room: number;
  /** Seconds requests have spent waiting for a region, summed. */
  waiting_s: number;
  /** Requests whose best held prefix was copied into a low region id before they started. */
  relocated: number;
  /** Requests that found a matching prefix only in a busy region and started cold elsewhere. */
  cold_resorts: number;
  /** Finished replies re-evaluated in pieces so the next turn reuses them exactly, and the seconds that took. */
  seals: number;
  seal_s: number;
  /** Regions sealing a reply now. */
  sealing: number;
  /** Finished replies waiting for the engine to be idle to be sealed (until then a follow-up re-evaluates them). */
  unsealed: number;
  /** How reused KV is matched: "rows" (replies reusable as decoded, never sealed), "pieces" or "prefix" (remote replicas; see kv/region-memory.ts). */
  reuse_match: "rows" | "pieces" | "prefix";
  /** Requests that waited for another region to evaluate a prefix they share, then copied it, and the seconds they waited. */
  prefix_waits: number;
  prefix_wait_s: number;
}

export interface DiskReport {
  enabled: boolean;
  dir: string | null;
  bytes: number;
  budget_bytes: number;
  entries: number;
  /** Requests that resumed from a state loaded from disk. */
  hits: number;
  writes: number;
  /** Files skipped and removed because they were truncated, corrupt or from another model or build. */
  rejected: number;
  /** Times a conversation's file was dropped or trimmed back to where its next request resumed. */
  cut_back: number;
  /** Why the tier turned itself off, when it did. */
  disabled_reason: string | null;
}

export interface CacheReport {
  enabled: boolean;
  /** Requests that reached a region. */
  requests: number;
  /** Requests that reused at least one prompt token. */
  hits: number;
  misses: number;
  hit_rate: number;
  /** Prompt tokens seen, and those served from the cache. */
  prompt_tokens: number;
  cached_tokens: number;
  token_hit_rate: number;
  /** Misses and partial reuse by reason. */
  miss_reasons: Record<MissReason, number>;
  /** Held conversations (regions with reusable state, not busy). */
  entries: number;
  /** Bytes of KV those entries occupy. */
  bytes: number;
  /** Held entries overwritten by another conversation. */
  evicted: number;
  /** Requests that resumed inside the previous request's last message of the same conversation. */
  last_message_rewrites: number;
  /** Prompt tokens whose evaluation the cache saved (same as cached_tokens; kept for the metric name). */
  tokens_saved: number;
  pool: PoolReport;
  disk: DiskReport;
  /** Epoch ms when these numbers were taken. */
  taken_at: number;
  /** Seconds since the engine last updated the numbers, when a long cold prefill is running. */
  stale_s?: number;
  /** Per remote replica: occupancy and what its prompt cache served (remote engine only). */
  replicas?: ReplicaCacheReport[];
}

export interface ReplicaCacheReport {
  url: string;
  up: boolean;
  slots: number;
  busy_slots: number;
  requests: number;
  /** Requests the replica served at least one prompt token of from its cache. */
  hits: number;
  hit_rate: number;
  prompt_tokens: number;
  /** Prompt tokens the replica reported cached, and what the routing expected it to hold. */
  cached_tokens: number;
  expected_cached_tokens: number;
  token_hit_rate: number;
  /** Token ids in the front end's prefix record of this replica. */
  prefix_tokens: number;
  routed: Record<RouteReason, number>;
}
