// Requests starting on the same long prefix: the first evaluates it, the others wait and copy
// (src/engine/llama/shared-prefill.ts).

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {emptyMemory, planCuts, type CutPlan, type RegionMemory} from "../../../../src/engine/kv/region-memory.ts";
import {SharedPrefill, SHARE_MIN_TOKENS} from "../../../../src/engine/llama/shared-prefill.ts";

const seq = (n: number, from = 0) => Array.from({length: n}, (_, i) => from + i);
const plan = (length: number): CutPlan => ({cuts: planCuts(length, 64), match: "pieces"});

function setup() {
  const regions: {id: number; busy: boolean; memory: RegionMemory}[] = [0, 1, 2].map((id) => ({id, busy: false, memory: emptyMemory()}));
  return {regions, shared: new SharedPrefill(() => regions, true)};
}

describe("SharedPrefill", () => {
  const system = seq(1000);
  const a = [...system, ...seq(20, 5000)];
  const b = [...system, ...seq(30, 7000)];

  test("the first request claims at once; a second on the same prefix waits until the first region has evaluated it", async () => {
    const {regions, shared} = setup();
    regions[0]!.busy = true;
    await shared.claim(0, a, plan(a.length), new AbortController().signal);
    regions[1]!.busy = true;
    let done = false;
    const waiting = shared.claim(1, b, plan(b.length), new AbortController().signal).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(done, false, "region 0 has evaluated nothing yet");
    // Matched by pieces the two prompts share cuts up to 960 (the system prompt ends inside a piece).
    regions[0]!.memory = {tokens: a.slice(0, 896), cuts: planCuts(896, 64), lastUsed: 0, replyStart: 0};
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(done, false, "896 of the 960 tokens it can copy");
    regions[0]!.memory = {tokens: a.slice(0, 1000), cuts: planCuts(1000, 64), lastUsed: 0, replyStart: 0};
    await waiting;
    assert.equal(shared.waits, 1);
    assert.ok(shared.waitedS > 0.1);
  });

  test("no wait when an idle region already holds the prefix, when too little is shared, or when the claimer stops", async () => {
    const {regions, shared} = setup();
    regions[0]!.busy = true;
    await shared.claim(0, a, plan(a.length), new AbortController().signal);
    regions[2]!.memory = {tokens: system, cuts: planCuts(1000, 64), lastUsed: 0, replyStart: 0};
    await shared.claim(1, b, plan(b.length), new AbortController().signal);
    assert.equal(shared.waits, 0, "region 2 holds the system prompt already");
    const short = [...seq(SHARE_MIN_TOKENS - 10), 99999];
    await shared.claim(2, short, plan(short.length), new AbortController().signal);
    assert.equal(shared.waits, 0, "less than SHARE_MIN_TOKENS shared");

    const other = setup();
    other.regions[0]!.busy = true;
    await other.shared.claim(0, a, plan(a.length), new AbortController().signal);
    const waiting = other.shared.claim(1, b, plan(b.length), new AbortController().signal);
    setTimeout(() => other.shared.release(0), 40);
    await waiting;
    assert.equal(other.shared.waits, 1, "waited, then went on when region 0's request ended");
  });

  test("a client that hangs up stops waiting", async () => {
    const {regions, shared} = setup();
    regions[0]!.busy = true;
    await shared.claim(0, a, plan(a.length), new AbortController().signal);
    const controller = new AbortController();
    const waiting = shared.claim(1, b, plan(b.length), controller.signal);
    setTimeout(() => controller.abort(), 30);
    await waiting;
    assert.equal(controller.signal.aborted, true);
  });

  test("with the prompt cache off nobody waits", async () => {
    const regions = [{id: 0, busy: true, memory: emptyMemory()}, {id: 1, busy: true, memory: emptyMemory()}];
    const shared = new SharedPrefill(() => regions, false);
    await shared.claim(0, a, plan(a.length), new AbortController().signal);
    await shared.claim(1, b, plan(b.length), new AbortController().signal);
    assert.equal(shared.waits, 0);
  });
});
