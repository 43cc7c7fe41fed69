// The per-request log line: prefill rate only past the floor, cached share, pool occupancy, levels.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {Timings} from "../../../src/core/generation.ts";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {logRequest, PREFILL_RATE_FLOOR, requestLogFields, type RequestRecord} from "../../../src/observability/request-log.ts";

function timings(over: Partial<Timings> = {}): Timings {
  return {
    prompt_n: 150, prompt_ms: 123.4, prompt_per_second: 1215.56,
    predicted_n: 20, predicted_ms: 400, predicted_per_second: 49.96,
    cache_n: 50, draft_n: 0, draft_n_accepted: 0,
    ...over,
  };
}

function record(over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: "req-9", route: "/v1/chat/completions", status: 200, stream: true,
    promptTokens: 200, timings: timings(), finish: "stop", regionId: 1,
    busyRegions: 2, totalRegions: 4, totalMs: 612.7,
    ...over,
  };
}

describe("requestLogFields", () => {
  test("the time breakdown: queue, preparation, prefill, steps in the engine, batch wait, and the rest outside it", () => {
    const f = requestLogFields(record({phases: {queueMs: 12.4, prepareMs: 3.6, batchWaitMs: 40.2, engineMs: 310.7}}));
    assert.deepEqual([f.queue_ms, f.prep_ms, f.prefill_ms, f.step_ms, f.batch_wait_ms, f.outside_ms], [12, 4, 123, 311, 40, 89]);
    const refused = requestLogFields(record({timings: null, phases: {queueMs: 1500, prepareMs: 0, batchWaitMs: 0, engineMs: 0}}));
    assert.deepEqual([refused.queue_ms, refused.prep_ms, refused.step_ms], [1500, 0, undefined], "no decode fields without timings");
    assert.equal(requestLogFields(record()).queue_ms, undefined, "an engine that does not measure phases adds none");
  });

  test("the floor is 2048", () => {
    assert.equal(PREFILL_RATE_FLOOR, 2048);
  });

  test("all fields of a finished request, in order", () => {
    const f = requestLogFields(record());
    assert.deepEqual(Object.entries(f), [
      ["id", "req-9"], ["route", "/v1/chat/completions"], ["status", 200], ["stream", true], ["finish", "stop"],
      ["prompt", 200], ["cached", "25%"], ["new", 150], ["gen", 20], ["decode_tps", 50], ["ttft_ms", 123],
      ["region", 1], ["pool", "2/4"], ["ms", 613],
    ]);
  });

  test("prefill rate: absent at 2047 new prompt tokens, present at 2048", () => {
    const below = requestLogFields(record({promptTokens: 2047, timings: timings({prompt_n: 2047, cache_n: 0, prompt_per_second: 3001.6})}));
    assert.equal("prefill_tps" in below, false);
    const at = requestLogFields(record({promptTokens: 2048, timings: timings({prompt_n: 2048, cache_n: 0, prompt_per_second: 3001.6})}));
    assert.equal(at.prefill_tps, 3002);
    assert.deepEqual(Object.keys(at).slice(5, 10), ["prompt", "cached", "new", "prefill_tps", "gen"]);
  });

  test("the floor applies to new tokens, not the whole prompt", () => {
    const f = requestLogFields(record({promptTokens: 5000, timings: timings({prompt_n: 100, cache_n: 4900})}));
    assert.equal("prefill_tps" in f, false);
    assert.equal(f.cached, "98%");
  });

  test("cached share is a rounded percent of the prompt", () => {
    assert.equal(requestLogFields(record({promptTokens: 3, timings: timings({cache_n: 1})})).cached, "33%");
    assert.equal(requestLogFields(record({promptTokens: 3, timings: timings({cache_n: 2})})).cached, "67%");
    assert.equal(requestLogFields(record({promptTokens: 8, timings: timings({cache_n: 8})})).cached, "100%");
    assert.equal(requestLogFields(record({promptTokens: 0, timings: timings({cache_n: 0})})).cached, "0%");
  });

  test("decode rate only with more than one generated token, to 0.1", () => {
    assert.equal(requestLogFields(record({timings: timings({predicted_n: 2, predicted_per_second: 12.345})})).decode_tps, 12.3);
    assert.equal("decode_tps" in requestLogFields(record({timings: timings({predicted_n: 1})})), false);
    assert.equal("decode_tps" in requestLogFields(record({timings: timings({predicted_n: 0})})), false);
  });

  test("drafts as accepted/proposed, only when speculation proposed any", () => {
    assert.equal(requestLogFields(record({timings: timings({draft_n: 12, draft_n_accepted: 9})})).draft, "9/12");
    assert.equal(requestLogFields(record({timings: timings({draft_n: 3, draft_n_accepted: 0})})).draft, "0/3");
    assert.equal("draft" in requestLogFields(record({timings: timings({draft_n: 0, draft_n_accepted: 0})})), false);
  });

  test("pool is busy/total", () => {
    assert.equal(requestLogFields(record({busyRegions: 0, totalRegions: 1})).pool, "0/1");
    assert.equal(requestLogFields(record({busyRegions: 4, totalRegions: 4})).pool, "4/4");
  });

  test("a request that never ran: no timing fields, no region, the error", () => {
    const f = requestLogFields(record({status: 503, timings: null, regionId: null, finish: "error", promptTokens: 0, error: "all regions are busy"}));
    assert.deepEqual(f, {id: "req-9", route: "/v1/chat/completions", status: 503, stream: true, finish: "error", pool: "2/4", ms: 613, error: "all regions are busy"});
  });

  test("region 0 is printed", () => {
    assert.equal(requestLogFields(record({regionId: 0})).region, 0);
  });
});

describe("logRequest", () => {
  test("one info line for a success, key=value after the message", () => {
    const logger = createMemoryLogger();
    logRequest(logger, record());
    assert.equal(logger.lines.length, 1);
    assert.match(logger.lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z svc info request /);
    assert.equal(logger.lines[0]!.replace(/^\S+ /, ""),
      'svc info request id=req-9 route=/v1/chat/completions status=200 stream=true finish=stop prompt=200 cached=25% new=150 gen=20 decode_tps=50 ttft_ms=123 region=1 pool=2/4 ms=613');
  });

  test("a 4xx is info, a 5xx is error; an error with spaces is quoted", () => {
    const logger = createMemoryLogger();
    logRequest(logger, record({status: 400, timings: null, regionId: null, finish: "error", error: "bad"}));
    logRequest(logger, record({status: 500, timings: null, regionId: null, finish: "error", error: "internal error: boom now"}));
    assert.equal(logger.lines.length, 2);
    assert.equal(logger.lines[0]!.replace(/^\S+ /, ""), "svc info request id=req-9 route=/v1/chat/completions status=400 stream=true finish=error pool=2/4 ms=613 error=bad");
    assert.equal(logger.lines[1]!.replace(/^\S+ /, ""), 'svc error request id=req-9 route=/v1/chat/completions status=500 stream=true finish=error pool=2/4 ms=613 error="internal error: boom now"');
  });
});
