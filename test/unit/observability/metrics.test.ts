// GET /metrics: every name of the spec's table with the right # TYPE, values read from the sources at scrape
// time, rates over the requests since the previous scrape, and the route's content type.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import Fastify from "fastify";
import {register as globalRegistry} from "prom-client";
import type {Timings} from "../../../src/core/generation.ts";
import {MISS_REASONS, type CacheReport} from "../../../src/core/engine-report.ts";
import {registerMetricsRoute} from "../../../src/api/ops/metrics-routes.ts";
import {newCounters} from "../../../src/observability/counters.ts";
import {createMetrics, METRIC_NAMES, type MetricsSources} from "../../../src/observability/metrics.ts";
import {ServerStats} from "../../../src/observability/server-stats.ts";

/** The spec's metric table, in its order. */
const SPEC_NAMES = [
  "ref:prompt_tokens_total", "ref:tokens_predicted_total", "ref:prompt_seconds_total", "ref:tokens_predicted_seconds_total",
  "ref:prompt_tokens_seconds", "ref:predicted_tokens_seconds",
  "ref:requests_processing", "ref:requests_deferred",
  "ref:kv_cache_tokens", "ref:kv_cache_usage_ratio",
  "svc:requests_total", "svc:prompt_tokens_cached_total", "svc:draft_tokens_total", "svc:draft_tokens_accepted_total",
  "svc:structured_requests_total",
  "svc:kv_pool_positions", "svc:kv_pool_reserved_tokens",
  "svc:kv_pool_waiting_for_room",
  "svc:queue_waited_total", "svc:queue_wait_seconds_total", "svc:queue_wait_longest_seconds", "svc:queue_gave_up_total",
  "svc:cache_hits_total", "svc:cache_misses_total", "svc:cache_prompt_tokens_saved_total", "svc:cache_entries", "svc:cache_bytes",
  "svc:cache_evicted_total",
  "svc:cache_disk_enabled", "svc:cache_disk_bytes", "svc:cache_disk_budget_bytes", "svc:cache_disk_hits_total",
  "svc:cache_last_message_rewrites_total",
  "svc:cache_disk_cut_back_total",
  "svc:engine_up", "svc:busy_for_seconds", "svc:build_info",
  "svc:cache_stats_age_seconds",
  "svc:strict_tools_unenforced_total",
];
const OUR_NAMES = ["svc:cache_misses_by_reason_total", "svc:cache_disk_rejected_total", "svc:phase_queue_seconds_total",
  "svc:phase_prepare_seconds_total", "svc:phase_batch_wait_seconds_total", "svc:phase_decode_engine_seconds_total",
  "svc:phase_decode_outside_seconds_total", "svc:seals_total", "svc:seal_seconds_total",
  "svc:prefix_waits_total", "svc:prefix_wait_seconds_total", "svc:transcriptions_total", "svc:transcribed_audio_seconds_total",
  "svc:images_total", "svc:replica_up", "svc:replica_busy_slots", "svc:replica_slots", "svc:replica_requests_total", "svc:replica_cache_hits_total",
  "svc:replica_prompt_tokens_total", "svc:replica_cached_tokens_total", "svc:child_restarts_total", "svc:child_crashes_total", "svc:child_ready"];

const ROUTED = {prefix: 0, overloaded: 0, least_loaded: 0, round_robin: 0, waited: 0, failover: 0, session: 0};

function timings(over: Partial<Timings>): Timings {
  return {prompt_n: 0, prompt_ms: 0, prompt_per_second: 0, predicted_n: 0, predicted_ms: 0, predicted_per_second: 0,
    cache_n: 0, draft_n: 0, draft_n_accepted: 0, ...over};
}

function report(): CacheReport {
  return {
    enabled: true, requests: 31, hits: 21, misses: 10, hit_rate: 0.677, prompt_tokens: 9000, cached_tokens: 5100, token_hit_rate: 0.567,
    miss_reasons: {cold: 4, cache_off: 0, region_busy: 2, evicted: 0, diverged: 3},
    entries: 5, bytes: 123456789, evicted: 8, last_message_rewrites: 6, tokens_saved: 5100,
    pool: {positions: 32768, used: 12000, usage_ratio: 0.3662, busy_regions: 2, held_regions: 3, room_clamped: 1, moved: 2,
      dropped: 3, waiting_for_room: 9, waiting_s: 12.5, relocated: 1, cold_resorts: 2, seals: 14, seal_s: 3.25, sealing: 1, unsealed: 2, reuse_match: "rows", prefix_waits: 4, prefix_wait_s: 1.5},
    disk: {enabled: true, dir: "/tmp/x", bytes: 777000, budget_bytes: 1_000_000_000, entries: 4, hits: 13, writes: 20, rejected: 17,
      cut_back: 19, disabled_reason: null},
    taken_at: Date.now() - 2000,
    replicas: [
      {url: "http://a:1", up: true, slots: 2, busy_slots: 1, requests: 9, hits: 7, hit_rate: 0.778, prompt_tokens: 900, cached_tokens: 600,
        expected_cached_tokens: 620, token_hit_rate: 0.667, prefix_tokens: 1000, routed: {...ROUTED, prefix: 7, least_loaded: 2}},
      {url: "http://b:2", up: false, slots: 4, busy_slots: 0, requests: 3, hits: 0, hit_rate: 0, prompt_tokens: 120, cached_tokens: 0,
        expected_cached_tokens: 0, token_hit_rate: 0, prefix_tokens: 0, routed: {...ROUTED, least_loaded: 3}},
    ],
  };
}

function sources(): MetricsSources {
  const stats = new ServerStats();
  stats.recordFinished({route: "/v1/chat/completions", status: 200, structured: true,
    timings: timings({prompt_n: 100, prompt_ms: 500, predicted_n: 40, predicted_ms: 2000, cache_n: 30, draft_n: 10, draft_n_accepted: 6}),
    phases: {queueMs: 250, prepareMs: 125, batchWaitMs: 500, engineMs: 1500}});
  stats.recordFinished({route: "/v1/chat/completions", status: 200, structured: false,
    timings: timings({prompt_n: 300, prompt_ms: 1500, predicted_n: 60, predicted_ms: 1000, cache_n: 0, draft_n: 4, draft_n_accepted: 1}),
    phases: {queueMs: 1000, prepareMs: 0, batchWaitMs: 250, engineMs: 750}});
  stats.recordFinished({route: "/v1/completions", status: 429, structured: false, timings: null});
  stats.recordWait(2.5, true);
  stats.recordWait(0.5, false);
  stats.recordWait(3, false);
  stats.startRunning(performance.now() - 5000);
  stats.startRunning();
  const counters = newCounters();
  counters.strictToolsUnenforced = 7;
  counters.transcriptions = 3;
  counters.transcribedAudioSeconds = 61.5;
  return {
    stats, counters, cache: report, queue: () => ({deferred: 3, longestWaitS: 4.25}), engineUp: () => true,
    build: {version: "0.1.0", engine: "llama.cpp b1234", model: "tiny-q4"},
    children: () => [CHILD, {...CHILD, name: "other", state: "restarting", restarts: 1}],
  };
}

const CHILD = {name: "nx3-asr-0.6b", state: "ready" as const, pid: 42, restarts: 3, crashes: 2, last_exit: "killed by SIGKILL",
  last_restart_at: new Date().toISOString()};

interface Sample {labels: Record<string, string>; value: number}

function parse(text: string): {types: Map<string, string>; samples: Map<string, Sample[]>} {
  const types = new Map<string, string>();
  const samples = new Map<string, Sample[]>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) {
      types.set(t[1]!, t[2]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `unparsed line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const list = samples.get(m[1]!) ?? [];
    list.push({labels, value: Number(m[3])});
    samples.set(m[1]!, list);
  }
  return {types, samples};
}

/** The value of an unlabelled metric. */
function value(samples: Map<string, Sample[]>, name: string): number {
  const list = samples.get(name);
  assert.ok(list && list.length === 1, `${name}: one sample expected, got ${JSON.stringify(list)}`);
  return list[0]!.value;
}

/** Rates divide float sums of seconds, so they are compared to 1e-9. */
function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);
}

describe("metrics", () => {
  test("the declared names are the spec's table, in order, then ours", () => {
    assert.deepEqual([...METRIC_NAMES], [...SPEC_NAMES, ...OUR_NAMES]);
  });

  test("every name has a # TYPE line: counter for _total, gauge otherwise", async () => {
    const {types, samples} = parse(await createMetrics(sources()).render());
    for (const name of [...SPEC_NAMES, ...OUR_NAMES]) {
      assert.equal(types.get(name), name.endsWith("_total") ? "counter" : "gauge", name);
      assert.ok(samples.has(name), `${name} has no sample`);
    }
    assert.equal(types.size, SPEC_NAMES.length + OUR_NAMES.length);
  });

  test("values equal the sources", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    const expected: Record<string, number> = {
      "ref:prompt_tokens_total": 400, "ref:tokens_predicted_total": 100,
      "ref:prompt_seconds_total": 2, "ref:tokens_predicted_seconds_total": 3,
      "ref:requests_processing": 2, "ref:requests_deferred": 3, "ref:kv_cache_tokens": 12000, "ref:kv_cache_usage_ratio": 0.3662,
      "svc:prompt_tokens_cached_total": 30, "svc:draft_tokens_total": 14, "svc:draft_tokens_accepted_total": 7,
      "svc:structured_requests_total": 1, "svc:kv_pool_positions": 32768, "svc:kv_pool_reserved_tokens": 12000,
      "svc:kv_pool_waiting_for_room": 9, "svc:queue_waited_total": 2, "svc:queue_wait_seconds_total": 5.5,
      "svc:queue_wait_longest_seconds": 4.25, "svc:queue_gave_up_total": 2,
      "svc:cache_hits_total": 21, "svc:cache_misses_total": 10, "svc:cache_prompt_tokens_saved_total": 5100, "svc:cache_entries": 5,
      "svc:cache_bytes": 123456789, "svc:cache_evicted_total": 8, "svc:cache_disk_enabled": 1, "svc:cache_disk_bytes": 777000,
      "svc:cache_disk_budget_bytes": 1_000_000_000, "svc:cache_disk_hits_total": 13, "svc:cache_last_message_rewrites_total": 6,
      "svc:cache_disk_cut_back_total": 19, "svc:engine_up": 1, "svc:strict_tools_unenforced_total": 7,
      "svc:cache_disk_rejected_total": 17,
      // Phases summed over the two requests that had them; outside = predicted_ms - engineMs per request.
      "svc:phase_queue_seconds_total": 1.25, "svc:phase_prepare_seconds_total": 0.125, "svc:phase_batch_wait_seconds_total": 0.75,
      "svc:phase_decode_engine_seconds_total": 2.25, "svc:phase_decode_outside_seconds_total": 0.75,
      "svc:seals_total": 14, "svc:seal_seconds_total": 3.25, "svc:prefix_waits_total": 4, "svc:prefix_wait_seconds_total": 1.5,
      "svc:transcriptions_total": 3, "svc:transcribed_audio_seconds_total": 61.5,
    };
    for (const [name, v] of Object.entries(expected)) assert.equal(value(samples, name), v, name);
    const busy = value(samples, "svc:busy_for_seconds");
    assert.ok(busy >= 5 && busy < 6, `busy_for_seconds ${busy}`);
    const age = value(samples, "svc:cache_stats_age_seconds");
    assert.ok(age >= 2 && age < 3, `cache_stats_age_seconds ${age}`);
  });

  test("per-replica series carry the replica's URL; none without remote replicas", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    const of = (name: string) => Object.fromEntries((samples.get(name) ?? []).map((x) => [x.labels.replica, x.value]));
    assert.deepEqual(of("svc:replica_up"), {"http://a:1": 1, "http://b:2": 0});
    assert.deepEqual(of("svc:replica_busy_slots"), {"http://a:1": 1, "http://b:2": 0});
    assert.deepEqual(of("svc:replica_slots"), {"http://a:1": 2, "http://b:2": 4});
    assert.deepEqual(of("svc:replica_requests_total"), {"http://a:1": 9, "http://b:2": 3});
    assert.deepEqual(of("svc:replica_cache_hits_total"), {"http://a:1": 7, "http://b:2": 0});
    assert.deepEqual(of("svc:replica_prompt_tokens_total"), {"http://a:1": 900, "http://b:2": 120});
    assert.deepEqual(of("svc:replica_cached_tokens_total"), {"http://a:1": 600, "http://b:2": 0});
    const local = parse(await createMetrics({...sources(), cache: () => ({...report(), replicas: undefined})}).render());
    assert.equal(local.samples.get("svc:replica_up"), undefined);
  });

  test("per-child series carry the side model's id; none without children", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    const of = (name: string) => Object.fromEntries((samples.get(name) ?? []).map((x) => [x.labels.child, x.value]));
    assert.deepEqual(of("svc:child_restarts_total"), {"nx3-asr-0.6b": 3, other: 1});
    assert.deepEqual(of("svc:child_crashes_total"), {"nx3-asr-0.6b": 2, other: 2});
    assert.deepEqual(of("svc:child_ready"), {"nx3-asr-0.6b": 1, other: 0});
    assert.equal(parse(await createMetrics({...sources(), children: undefined}).render()).samples.get("svc:child_ready"), undefined);
  });

  test("reserved tokens come from reservedTokens() when given", async () => {
    const {samples} = parse(await createMetrics({...sources(), reservedTokens: () => 4321}).render());
    assert.equal(value(samples, "svc:kv_pool_reserved_tokens"), 4321);
  });

  test("the rate gauges are the rate over the requests finished since the previous scrape", async () => {
    const src = sources();
    const metrics = createMetrics(src);
    let {samples} = parse(await metrics.render());
    near(value(samples, "ref:prompt_tokens_seconds"), 200, "ref:prompt_tokens_seconds");
    near(value(samples, "ref:predicted_tokens_seconds"), 100 / 3, "ref:predicted_tokens_seconds");
    src.stats.recordFinished({route: "/v1/completions", status: 200, structured: false,
      timings: timings({prompt_n: 90, prompt_ms: 300, predicted_n: 10, predicted_ms: 400})});
    ({samples} = parse(await metrics.render()));
    near(value(samples, "ref:prompt_tokens_seconds"), 300, "ref:prompt_tokens_seconds");
    near(value(samples, "ref:predicted_tokens_seconds"), 25, "ref:predicted_tokens_seconds");
    // Nothing finished since: no seconds passed, so 0.
    ({samples} = parse(await metrics.render()));
    near(value(samples, "ref:prompt_tokens_seconds"), 0, "ref:prompt_tokens_seconds");
    near(value(samples, "ref:predicted_tokens_seconds"), 0, "ref:predicted_tokens_seconds");
  });

  test("one reading of the cache per scrape", async () => {
    let calls = 0;
    const metrics = createMetrics({...sources(), cache: () => (calls++, report())});
    await metrics.render();
    assert.equal(calls, 1);
    await metrics.render();
    assert.equal(calls, 2);
  });

  test("requests_total carries route and status", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    assert.deepEqual(samples.get("svc:requests_total"), [
      {labels: {route: "/v1/chat/completions", status: "200"}, value: 2},
      {labels: {route: "/v1/completions", status: "429"}, value: 1},
    ]);
  });

  test("miss reasons: one series per reason, zeros included", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    const got = samples.get("svc:cache_misses_by_reason_total") ?? [];
    assert.deepEqual(got.map((s) => s.labels.reason), [...MISS_REASONS]);
    assert.deepEqual(Object.fromEntries(got.map((s) => [s.labels.reason, s.value])),
      {cold: 4, cache_off: 0, region_busy: 2, evicted: 0, diverged: 3});
  });

  test("build_info is 1 with version, engine and model", async () => {
    const {samples} = parse(await createMetrics(sources()).render());
    assert.deepEqual(samples.get("svc:build_info"), [{labels: {version: "0.1.0", engine: "llama.cpp b1234", model: "tiny-q4"}, value: 1}]);
  });

  test("an engine down reads 0", async () => {
    const {samples} = parse(await createMetrics({...sources(), engineUp: () => false}).render());
    assert.equal(value(samples, "svc:engine_up"), 0);
  });

  test("a private registry: nothing lands in prom-client's global one", async () => {
    const metrics = createMetrics(sources());
    assert.notEqual(metrics.registry, globalRegistry);
    assert.equal(globalRegistry.getSingleMetric("svc:engine_up"), undefined);
    // Two instances do not collide on names.
    createMetrics(sources());
  });

  test("GET /metrics answers 200 in the Prometheus text format", async () => {
    const app = Fastify();
    const metrics = createMetrics(sources());
    registerMetricsRoute(app, metrics);
    try {
      const res = await app.inject({method: "GET", url: "/metrics"});
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
      const {types, samples} = parse(res.body);
      assert.equal(types.get("svc:requests_total"), "counter");
      assert.equal(value(samples, "svc:cache_hits_total"), 21);
    } finally {
      await app.close();
    }
  });
});
