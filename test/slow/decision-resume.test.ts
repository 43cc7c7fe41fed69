// SVC_NPU_DEC_RESUME 0, 1 and 2 give bit-identical decisions (slow: three servers with the decision model),
// moved from test/e2e/decisions.test.ts, which tests the rest of decisions. The decider (and the reranker beside
// it) runs the test model: the assertions are exactness and reuse counts, not which option wins.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {DECIDE} from "../e2e/decide-fixture.ts";
import {longPost, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

let s0: RunningServer;
let s1: RunningServer;
let s2: RunningServer;

const BASE = {SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1800"};

before(async () => {
  const model = await testModelPath();
  [s0, s1, s2] = await Promise.all([
    startServer({...BASE, SVC_NPU_MODELS: `decider-0.8b=${model}`, SVC_NPU_DEC_RESUME: "0"}),
    startServer({...BASE, SVC_NPU_MODELS: `decider-0.8b=${model}`, SVC_NPU_DEC_RESUME: "1"}),
    startServer({...BASE, SVC_NPU_MODELS: `decider-0.8b=${model},nx3-reranker-0.6b=${model}`, SVC_NPU_DEC_RESUME: "2", SVC_NPU_DEC_ENTRIES: "2"}),
  ]);
});
after(async () => {
  await Promise.all([s0?.stop(), s1?.stop(), s2?.stop()]);
});

describe("SVC_NPU_DEC_RESUME", () => {
  // Long enough (>128 tokens) that an extension shares whole 64-token pieces with the kept text.
  const LONG = Array.from({length: 12}, (_, i) => `Day ${i + 1}: the team met, reviewed the open issues, fixed two bugs and wrote notes for the next release.`).join(" ");
  const requests = [
    DECIDE,
    {...DECIDE, state: LONG},
    {state: LONG, questions: {done: {type: "noul", instructions: "Did the team fix bugs?"}}},
    {state: "Another text entirely.", questions: {x: {type: "noul", instructions: "Is it short?"}}},
    {state: `${LONG} Day 13: the release shipped.`, questions: {shipped: {type: "noul", instructions: "Did the release ship?"}}},
    DECIDE,
  ];

  test("answers are bit-identical with resume 0, 1 and 2; 1 and 2 report the reused text", async () => {
    const run = async (s: RunningServer) => {
      const out = [];
      for (const body of requests) {
        const r = await longPost(`${s.url}/v1/decide`, body);
        assert.equal(r.status, 200, r.text);
        out.push(r.body);
      }
      return out;
    };
    const [r0, r1, r2] = [await run(s0), await run(s1), await run(s2)];
    for (let i = 0; i < requests.length; i++) {
      assert.deepEqual(r1[i].answers, r0[i].answers, `request ${i}: resume 1 = resume 0`);
      assert.deepEqual(r2[i].answers, r0[i].answers, `request ${i}: resume 2 = resume 0`);
    }
    assert.equal(r0[0].usage.cached_tokens, 0, "resume 0 reads every prompt whole");
    assert.ok(r1[0].usage.cached_tokens > 0, "resume 1: the later questions reuse the text");
    assert.equal(r1[2].usage.cached_tokens, 0, "resume 1 keeps nothing across requests");
    // Request 2 repeats request 1's text; request 4 extends it after another text came between (restored from a kept state).
    assert.ok(r2[2].usage.cached_tokens >= 128, `resume 2 reuses the kept text (${r2[2].usage.cached_tokens})`);
    assert.ok(r2[4].usage.cached_tokens >= 128, `resume 2 reuses a kept text that the new one extends (${r2[4].usage.cached_tokens})`);
    assert.ok(s2.logs.some((l) => /decision .*restored=true/.test(l)), "a kept text was restored");
  });
});
