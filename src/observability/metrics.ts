// Every metric GET /metrics exports, declared in one table (the spec's order), on a private prom-client registry.
// Values are read from plain fields at scrape time (ServerStats, Counters, the engine's CacheReport), so a
// scrape never waits on the engine and nothing has to be incremented in two places.
//
// Totals kept elsewhere are prom-client Counters whose collect() calls reset() then inc(value): the text then
// says `# TYPE name counter`, which a Gauge (even one with its type field overwritten) would only fake, and
// no private field of prom-client is touched.

import {Counter, Gauge, Registry} from "prom-client";
import type {ChildStatus} from "../core/child-status.ts";
import {MISS_REASONS, type CacheReport, type ReplicaCacheReport} from "../core/engine-report.ts";
import type {Counters} from "./counters.ts";
import type {ServerStats} from "./server-stats.ts";

export interface MetricsSources {
  stats: ServerStats;
  counters: Counters;
  cache(): CacheReport;
  queue(): {deferred: number; longestWaitS: number};
  engineUp(): boolean;
  build: {version: string; engine: string; model: string};
  /**
   * Positions held by busy regions (the sum of n_past over engine.status()'s busy regions). Optional because
   * CacheReport has no busy/held split; without it svc:kv_pool_reserved_tokens falls back to pool.used.
   */
  reservedTokens?(): number;
  /** The supervised child processes (side models' engines), as /health lists them. */
  children?(): ChildStatus[];
}

/** One scrape's reading of every source, taken once so all metrics of a scrape agree. */
interface Reading {
  stats: ServerStats;
  counters: Counters;
  cache: CacheReport;
  queue: {deferred: number; longestWaitS: number};
  engineUp: boolean;
  build: {version: string; engine: string; model: string};
  reservedTokens: number;
  children: ChildStatus[];
  /** Tokens per second over the requests finished since the previous scrape. */
  promptRate: number;
  predictedRate: number;
  now: number;
}

type Labels = Record<string, string>;

interface MetricDef {
  name: string;
  help: string;
  type: "counter" | "gauge";
  labelNames?: readonly string[];
  series(r: Reading): {labels?: Labels; value: number}[];
}

const counter = (name: string, help: string, value: (r: Reading) => number): MetricDef =>
  ({name, help, type: "counter", series: (r) => [{value: value(r)}]});
const gauge = (name: string, help: string, value: (r: Reading) => number): MetricDef =>
  ({name, help, type: "gauge", series: (r) => [{value: value(r)}]});

const DEFS: readonly MetricDef[] = [
  counter("ref:prompt_tokens_total", "Prompt tokens processed (prompt_n, cached tokens excluded), summed over requests.",
    (r) => r.stats.promptTokens),
  counter("ref:tokens_predicted_total", "Tokens generated, summed over requests.", (r) => r.stats.predictedTokens),
  counter("ref:prompt_seconds_total", "Seconds spent processing prompts, summed over requests.", (r) => r.stats.promptSeconds),
  counter("ref:tokens_predicted_seconds_total", "Seconds spent generating tokens, summed over requests.", (r) => r.stats.predictedSeconds),
  gauge("ref:prompt_tokens_seconds", "Prompt tokens per second over the requests finished since the last scrape.", (r) => r.promptRate),
  gauge("ref:predicted_tokens_seconds", "Generated tokens per second over the requests finished since the last scrape.",
    (r) => r.predictedRate),
  gauge("ref:requests_processing", "Requests running now (a region leased).", (r) => r.stats.processing),
  gauge("ref:requests_deferred", "Requests waiting for a region now.", (r) => r.queue.deferred),
  gauge("ref:kv_cache_tokens", "KV positions in use (busy and held regions), as of the last completed request.",
    (r) => r.cache.pool.used),
  gauge("ref:kv_cache_usage_ratio", "KV positions in use over the pool's positions, as of the last completed request.",
    (r) => r.cache.pool.usage_ratio),
  {
    name: "svc:requests_total", help: "Requests answered, by route and HTTP status.", type: "counter", labelNames: ["route", "status"],
    series: (r) => [...r.stats.requests.values()].map((e) => ({labels: {route: e.route, status: String(e.status)}, value: e.count})),
  },
  counter("svc:prompt_tokens_cached_total", "Prompt tokens served from the prompt cache, summed over requests.",
    (r) => r.stats.cachedPromptTokens),
  counter("svc:draft_tokens_total", "Draft tokens proposed, summed over requests.", (r) => r.stats.draftTokens),
  counter("svc:draft_tokens_accepted_total", "Draft tokens accepted, summed over requests.", (r) => r.stats.draftAccepted),
  counter("svc:structured_requests_total", "Requests whose reply a schema or a strict tool bound.", (r) => r.stats.structuredRequests),
  gauge("svc:kv_pool_positions", "KV positions of every region together.", (r) => r.cache.pool.positions),
  gauge("svc:kv_pool_reserved_tokens", "KV positions held by busy regions (the front end's reservation).", (r) => r.reservedTokens),
  gauge("svc:kv_pool_waiting_for_room", "Requests waiting for room in the KV pool now.", (r) => r.cache.pool.waiting_for_room),
  counter("svc:queue_waited_total", "Requests that waited a second or more for a region.", (r) => r.stats.queueWaited),
  counter("svc:queue_wait_seconds_total", "Seconds those requests waited for a region, summed.", (r) => r.stats.queueWaitSeconds),
  gauge("svc:queue_wait_longest_seconds", "Seconds the longest current wait for a region has lasted.", (r) => r.queue.longestWaitS),
  counter("svc:queue_gave_up_total", "Requests that left the queue without a region (client gone or queue timeout).",
    (r) => r.stats.queueGaveUp),
  counter("svc:cache_hits_total", "Requests that reused at least one prompt token.", (r) => r.cache.hits),
  counter("svc:cache_misses_total", "Requests that reused no prompt token.", (r) => r.cache.misses),
  counter("svc:cache_prompt_tokens_saved_total", "Prompt tokens whose evaluation the prompt cache saved.", (r) => r.cache.tokens_saved),
  gauge("svc:cache_entries", "Held conversations (regions with reusable state, not busy).", (r) => r.cache.entries),
  gauge("svc:cache_bytes", "Bytes of KV the held conversations occupy.", (r) => r.cache.bytes),
  counter("svc:cache_evicted_total", "Held conversations overwritten by another conversation.", (r) => r.cache.evicted),
  gauge("svc:cache_disk_enabled", "1 when the disk tier of the prompt cache is on.", (r) => (r.cache.disk.enabled ? 1 : 0)),
  gauge("svc:cache_disk_bytes", "Bytes the disk tier holds.", (r) => r.cache.disk.bytes),
  gauge("svc:cache_disk_budget_bytes", "Bytes the disk tier may hold.", (r) => r.cache.disk.budget_bytes),
  counter("svc:cache_disk_hits_total", "Requests that resumed from a state loaded from disk.", (r) => r.cache.disk.hits),
  counter("svc:cache_last_message_rewrites_total", "Requests that resumed inside the previous request's last message.",
    (r) => r.cache.last_message_rewrites),
  counter("svc:cache_disk_cut_back_total", "Times the disk tier dropped or trimmed a conversation's files back.",
    (r) => r.cache.disk.cut_back),
  gauge("svc:engine_up", "1 when the engine is up.", (r) => (r.engineUp ? 1 : 0)),
  gauge("svc:busy_for_seconds", "Age in seconds of the oldest running request (0 when none runs).", (r) => r.stats.busyForSeconds()),
  {name: "svc:build_info", help: "The build: always 1, labelled with the svc version, the engine version and the model.", type: "gauge",
    labelNames: ["version", "engine", "model"], series: (r) => [{labels: {...r.build}, value: 1}]},
  gauge("svc:cache_stats_age_seconds", "Seconds since the engine took the cache numbers.", (r) => (r.now - r.cache.taken_at) / 1000),
  counter("svc:strict_tools_unenforced_total", "Strict tools served without enforcement.", (r) => r.counters.strictToolsUnenforced),
  // Our own, past the spec's table.
  {
    name: "svc:cache_misses_by_reason_total", help: "Misses and partial reuse by reason.", type: "counter", labelNames: ["reason"],
    series: (r) => MISS_REASONS.map((reason) => ({labels: {reason}, value: r.cache.miss_reasons[reason] ?? 0})),
  },
  counter("svc:cache_disk_rejected_total", "Disk tier files skipped and removed (truncated, corrupt, another model or build).",
    (r) => r.cache.disk.rejected),
  // Where requests' time goes (issue 16): the phases of EnginePhases, and the seals after replies.
  counter("svc:phase_queue_seconds_total", "Seconds requests waited in the queue for a region, summed.", (r) => r.stats.phaseSeconds.queue),
  counter("svc:phase_prepare_seconds_total", "Seconds spent preparing regions (copies, state loads, waits for a seal or a shared prefix), summed.",
    (r) => r.stats.phaseSeconds.prepare),
  counter("svc:phase_batch_wait_seconds_total", "Seconds decode steps waited for their batch to be dispatched, summed.",
    (r) => r.stats.phaseSeconds.batchWait),
  counter("svc:phase_decode_engine_seconds_total", "Seconds decode steps spent in the engine (batch wait, compute, sampling), summed.",
    (r) => r.stats.phaseSeconds.engine),
  counter("svc:phase_decode_outside_seconds_total", "Seconds between decode steps spent outside the engine (pipeline, SSE writes), summed.",
    (r) => r.stats.phaseSeconds.outside),
  counter("svc:seals_total", "Finished replies re-evaluated so the next turn reuses them exactly.", (r) => r.cache.pool.seals),
  counter("svc:seal_seconds_total", "Seconds those seals took, summed.", (r) => r.cache.pool.seal_s),
  counter("svc:prefix_waits_total", "Requests that waited for another region to evaluate a prefix they share, then copied it.",
    (r) => r.cache.pool.prefix_waits),
  counter("svc:prefix_wait_seconds_total", "Seconds those requests waited, summed.", (r) => r.cache.pool.prefix_wait_s),
  counter("svc:transcriptions_total", "Recordings transcribed by the speech model.", (r) => r.counters.transcriptions),
  counter("svc:transcribed_audio_seconds_total", "Seconds of audio those recordings held, summed.", (r) => r.counters.transcribedAudioSeconds),
  counter("svc:images_total", "Pictures drawn by the image model.", (r) => r.counters.images),
  // Remote replicas (SVC_ENGINE): no series with the in-process engine.
  replicaSeries("svc:replica_up", "1 when the remote replica answers its health check.", "gauge", (x) => (x.up ? 1 : 0)),
  replicaSeries("svc:replica_busy_slots", "Slots of the remote replica serving a request now.", "gauge", (x) => x.busy_slots),
  replicaSeries("svc:replica_slots", "Slots of the remote replica.", "gauge", (x) => x.slots),
  replicaSeries("svc:replica_requests_total", "Requests routed to the remote replica.", "counter", (x) => x.requests),
  replicaSeries("svc:replica_cache_hits_total", "Requests the replica served at least one prompt token of from its cache.", "counter", (x) => x.hits),
  replicaSeries("svc:replica_prompt_tokens_total", "Prompt tokens sent to the replica.", "counter", (x) => x.prompt_tokens),
  replicaSeries("svc:replica_cached_tokens_total", "Prompt tokens the replica reported served from its cache.", "counter", (x) => x.cached_tokens),
  childSeries("svc:child_restarts_total", "Times the child process serving a side model was started again, for any reason.", "counter",
    (c) => c.restarts),
  childSeries("svc:child_crashes_total", "Exits of the child process nobody asked for (a crash, a kill from outside, a failed health check).",
    "counter", (c) => c.crashes),
  childSeries("svc:child_ready", "1 when the child process serving a side model is ready.", "gauge", (c) => (c.state === "ready" ? 1 : 0)),
];

function childSeries(name: string, help: string, type: "gauge" | "counter", value: (c: ChildStatus) => number): MetricDef {
  return {name, help, type, labelNames: ["child"], series: (r) => r.children.map((c) => ({labels: {child: c.name}, value: value(c)}))};
}

function replicaSeries(name: string, help: string, type: "gauge" | "counter", value: (x: ReplicaCacheReport) => number): MetricDef {
  return {name, help, type, labelNames: ["replica"], series: (r) => (r.cache.replicas ?? []).map((x) => ({labels: {replica: x.url}, value: value(x)}))};
}

/** Every metric name /metrics exports, in order. */
export const METRIC_NAMES: readonly string[] = DEFS.map((d) => d.name);

/** Counters refuse negative or non-finite increments; a bad source reads as 0 rather than failing the scrape. */
const countable = (v: number): number => (Number.isFinite(v) && v > 0 ? v : 0);

export function createMetrics(sources: MetricsSources): {registry: Registry; render(): Promise<string>; contentType: string} {
  const registry = new Registry();
  let prev = {promptTokens: 0, promptSeconds: 0, predictedTokens: 0, predictedSeconds: 0};

  const take = (): Reading => {
    const {stats} = sources;
    const cache = sources.cache();
    const rate = (tokens: number, seconds: number) => (seconds > 0 ? tokens / seconds : 0);
    const reading: Reading = {
      stats,
      counters: sources.counters,
      cache,
      queue: sources.queue(),
      engineUp: sources.engineUp(),
      build: sources.build,
      reservedTokens: sources.reservedTokens ? sources.reservedTokens() : cache.pool.used,
      children: sources.children?.() ?? [],
      promptRate: rate(stats.promptTokens - prev.promptTokens, stats.promptSeconds - prev.promptSeconds),
      predictedRate: rate(stats.predictedTokens - prev.predictedTokens, stats.predictedSeconds - prev.predictedSeconds),
      now: Date.now(),
    };
    prev = {promptTokens: stats.promptTokens, promptSeconds: stats.promptSeconds,
      predictedTokens: stats.predictedTokens, predictedSeconds: stats.predictedSeconds};
    return reading;
  };

  // registry.metrics() runs every collect() in one synchronous pass, so a reading kept until the next
  // microtask is shared by the whole scrape: one cache() call, and the rate baseline moves once per scrape.
  let current: Reading | null = null;
  const reading = (): Reading => {
    if (!current) {
      current = take();
      queueMicrotask(() => { current = null; });
    }
    return current;
  };

  for (const def of DEFS) {
    const config = {name: def.name, help: def.help, labelNames: def.labelNames ?? [], registers: [registry]};
    if (def.type === "counter") {
      new Counter({...config, collect() {
        this.reset();
        for (const s of def.series(reading())) {
          if (s.labels) this.inc(s.labels, countable(s.value));
          else this.inc(countable(s.value));
        }
      }});
    } else {
      new Gauge({...config, collect() {
        this.reset();
        for (const s of def.series(reading())) {
          if (s.labels) this.set(s.labels, s.value);
          else this.set(s.value);
        }
      }});
    }
  }

  return {registry, render: () => registry.metrics(), contentType: registry.contentType};
}
