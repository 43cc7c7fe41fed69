// The remote engine's /cache numbers: per replica what routing sent it and what its prompt cache served (the
// replica's own cached-token counts, from its timings), and the totals in the in-process engine's shape so
// /cache and /metrics read the same fields. Pool, disk and seal numbers do not apply to replicas and stay 0.

import type {CacheReport, ReplicaCacheReport} from "../../core/engine-report.ts";

export interface ReplicaCounts {
  requests: number;
  hits: number;
  promptTokens: number;
  cachedTokens: number;
  expectedCached: number;
  routed: ReplicaCacheReport["routed"];
}

const ratio = (a: number, b: number): number => (b > 0 ? Math.round((a / b) * 1000) / 1000 : 0);

export function replicaReport(url: string, up: boolean, slots: number, busy: number, prefixTokens: number, c: ReplicaCounts): ReplicaCacheReport {
  return {url, up, slots, busy_slots: busy, requests: c.requests, hits: c.hits, hit_rate: ratio(c.hits, c.requests), prompt_tokens: c.promptTokens,
    cached_tokens: c.cachedTokens, expected_cached_tokens: c.expectedCached, token_hit_rate: ratio(c.cachedTokens, c.promptTokens),
    prefix_tokens: prefixTokens, routed: {...c.routed}};
}

export function emptyCacheReport(replicas: ReplicaCacheReport[], positions: number, held: number): CacheReport {
  const sum = (f: (r: ReplicaCacheReport) => number) => replicas.reduce((n, r) => n + f(r), 0);
  const requests = sum((r) => r.requests);
  const hits = sum((r) => r.hits);
  const prompt = sum((r) => r.prompt_tokens);
  const cached = sum((r) => r.cached_tokens);
  const busy = sum((r) => r.busy_slots);
  return {
    enabled: true, requests, hits, misses: requests - hits, hit_rate: ratio(hits, requests), prompt_tokens: prompt, cached_tokens: cached,
    token_hit_rate: ratio(cached, prompt), miss_reasons: {cold: requests - hits, cache_off: 0, region_busy: 0, evicted: 0, diverged: 0},
    entries: 0, bytes: 0, evicted: 0, last_message_rewrites: 0, tokens_saved: cached,
    pool: {positions, used: held, usage_ratio: ratio(held, positions), busy_regions: busy, held_regions: 0, room_clamped: 0, moved: 0, dropped: 0,
      waiting_for_room: 0, waiting_s: 0, relocated: 0, cold_resorts: 0, seals: 0, seal_s: 0, sealing: 0, unsealed: 0, reuse_match: "prefix",
      prefix_waits: 0, prefix_wait_s: 0},
    disk: {enabled: false, dir: null, bytes: 0, budget_bytes: 0, entries: 0, hits: 0, writes: 0, rejected: 0, cut_back: 0,
      disabled_reason: "remote replicas keep their own caches"},
    taken_at: Date.now(),
    replicas,
  };
}
