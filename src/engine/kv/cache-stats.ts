// The prompt cache's counters, kept by the region pool as it places requests, and turned into the
// /cache report. Reading the report never touches the engine: it is a copy of numbers.

import {MISS_REASONS, type CacheReport, type DiskReport, type MissReason} from "../../core/engine-report.ts";
import type {Placement} from "./placement.ts";

export interface PoolShape {
  regions: number;
  positionsPerRegion: number;
}

export interface PoolOccupancy {
  usedPositions: number;
  busyRegions: number;
  heldRegions: number;
  heldPositions: number;
  waiting: number;
  bytesPerPosition: number;
  /** Regions re-evaluating a reply now, and replies waiting for an idle moment to be sealed. */
  sealing: number;
  unsealed: number;
  reuseMatch: "rows" | "pieces" | "prefix";
  prefixWaits: number;
  prefixWaitS: number;
}

export class CacheStats {
  requests = 0;
  hits = 0;
  promptTokens = 0;
  cachedTokens = 0;
  readonly missReasons: Record<MissReason, number> = Object.fromEntries(MISS_REASONS.map((r) => [r, 0])) as Record<MissReason, number>;
  evicted = 0;
  lastMessageRewrites = 0;
  roomClamped = 0;
  moved = 0;
  dropped = 0;
  relocated = 0;
  coldResorts = 0;
  waitingS = 0;
  /** Finished replies re-evaluated for exact reuse (seals), and the seconds they took. */
  seals = 0;
  sealS = 0;
  /** performance.now() when a long cold prefill began, while one runs (the report is then marked stale). */
  prefillSince: number | null = null;
  private takenAt = Date.now();

  constructor(private readonly enabled: boolean, private readonly shape: PoolShape) {}

  /** One request placed on a region. */
  recordPlacement(p: Placement, promptTokens: number): void {
    this.requests++;
    this.promptTokens += promptTokens;
    this.cachedTokens += p.reuse;
    if (p.reuse > 0) this.hits++;
    if (p.miss) this.missReasons[p.miss.reason]++;
    if (p.source.kind === "region" && p.source.id !== p.target) this.relocated++;
    if (p.moveAsideTo !== null) this.moved++;
    if (p.coldResort) this.coldResorts++;
    if (p.rewroteLastMessage) this.lastMessageRewrites++;
    this.evicted += p.overwritten.length;
    if (p.dropped) this.dropped++;
    this.takenAt = Date.now();
  }

  touch(): void {
    this.takenAt = Date.now();
  }

  report(occ: PoolOccupancy, disk: DiskReport): CacheReport {
    const positions = this.shape.regions * this.shape.positionsPerRegion;
    const misses = this.requests - this.hits;
    const report: CacheReport = {
      enabled: this.enabled,
      requests: this.requests,
      hits: this.hits,
      misses,
      hit_rate: ratio(this.hits, this.requests),
      prompt_tokens: this.promptTokens,
      cached_tokens: this.cachedTokens,
      token_hit_rate: ratio(this.cachedTokens, this.promptTokens),
      miss_reasons: {...this.missReasons},
      entries: occ.heldRegions,
      bytes: occ.heldPositions * occ.bytesPerPosition,
      evicted: this.evicted,
      last_message_rewrites: this.lastMessageRewrites,
      tokens_saved: this.cachedTokens,
      pool: {
        positions,
        used: occ.usedPositions,
        usage_ratio: ratio(occ.usedPositions, positions),
        busy_regions: occ.busyRegions,
        held_regions: occ.heldRegions,
        room_clamped: this.roomClamped,
        moved: this.moved,
        dropped: this.dropped,
        waiting_for_room: occ.waiting,
        waiting_s: Math.round(this.waitingS * 1000) / 1000,
        relocated: this.relocated,
        cold_resorts: this.coldResorts,
        seals: this.seals,
        seal_s: Math.round(this.sealS * 1000) / 1000,
        sealing: occ.sealing,
        unsealed: occ.unsealed,
        reuse_match: occ.reuseMatch,
        prefix_waits: occ.prefixWaits,
        prefix_wait_s: Math.round(occ.prefixWaitS * 1000) / 1000,
      },
      disk,
      taken_at: this.takenAt,
    };
    if (this.prefillSince !== null) report.stale_s = Math.round((performance.now() - this.prefillSince) / 100) / 10;
    return report;
  }
}

function ratio(a: number, b: number): number {
  return b > 0 ? Math.round((a / b) * 10000) / 10000 : 0;
}
