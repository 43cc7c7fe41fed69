// The drafter's bookkeeping and its "does it pay" rule, driven the way node-llama-cpp drives a predictor:
// reset() at the start of a run, predictTokens() before every decode step, pushTokens() with each token that
// enters the state (stop() when a draft is refuted, before the refuting token is pushed).

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {SPLIT_ROW_FROM} from "../../../../src/engine/kv/row-classes.ts";
import {LookupDrafter, LookupRecord, type DraftPolicy} from "../../../../src/engine/llama/prompt-lookup.ts";

const t = (xs: number[]) => xs as Token[];
// "10 11 12 13 14 15 16 17" appears in the prompt; a reply copying it makes the lookup right every time.
const PROMPT = [1, 2, 10, 11, 12, 13, 14, 15, 16, 17, 3];

function policy(over: Partial<DraftPolicy> = {}): DraftPolicy {
  return {mode: "on", stepCost: 1.5, record: new LookupRecord(), othersGenerating: () => false, ...over};
}

/** Starts a run whose state is the prompt, then its first step (the prompt's last piece). */
function start(p: DraftPolicy, wanted = () => true, position = () => 100): LookupDrafter {
  const d = new LookupDrafter(p, PROMPT, wanted, position);
  d.reset({stateTokens: t(PROMPT), evaluateOptions: {}, targetSequence: null as unknown as LlamaContextSequence});
  return d;
}

describe("LookupDrafter", () => {
  test("no draft on the first step (it evaluates the prompt's last piece, whose length is fixed by the cut plan)", () => {
    const d = start(policy());
    assert.deepEqual(d.predictTokens(), []);
  });

  test("with a two-token match it proposes the one token that followed in the prompt", () => {
    const d = start(policy());
    d.predictTokens();
    d.pushTokens(t([10])); // one token matches nothing yet (patterns are two tokens at least)
    assert.deepEqual(d.predictTokens(), []);
    d.pushTokens(t([11]));
    assert.deepEqual(d.predictTokens(), [12]);
    d.pushTokens(t([12]));
    assert.deepEqual(d.predictTokens(), [13], "one token, although the prompt continues");
  });

  test("shadow hits and misses are counted per run and engine-wide; a refuted draft still counts as a miss", () => {
    const record = new LookupRecord();
    const d = start(policy({record}));
    d.predictTokens();
    d.pushTokens(t([10]));
    d.predictTokens();
    d.pushTokens(t([11]));
    d.predictTokens(); // proposes 12
    d.pushTokens(t([12])); // hit
    d.predictTokens(); // proposes 13
    d.stop(); // the library refutes the draft...
    d.pushTokens(t([99])); // ...then pushes the token greedy chose: a miss
    assert.equal(record.proposals, 2);
    assert.equal(record.hits, 1);
    assert.equal(record.rate(), 0.5);
  });

  test("on: drafts whenever the lookup has one, but not for a step after which the reply ends", () => {
    let left = 5;
    const d = start(policy({mode: "on", othersGenerating: () => true}), () => left >= 2);
    d.predictTokens();
    d.pushTokens(t([10]));
    d.predictTokens();
    d.pushTokens(t([11]));
    assert.deepEqual(d.predictTokens(), [12], "on ignores other regions");
    left = 1;
    d.pushTokens(t([12]));
    assert.deepEqual(d.predictTokens(), []);
  });

  test("no draft for a step whose draft row would reach the position where generated steps go alone", () => {
    let at = SPLIT_ROW_FROM - 3;
    const d = start(policy(), () => true, () => at);
    d.predictTokens();
    d.pushTokens(t([10]));
    d.predictTokens();
    d.pushTokens(t([11]));
    assert.deepEqual(d.predictTokens(), [12], "rows at SPLIT_ROW_FROM - 3 and - 2");
    d.pushTokens(t([12]));
    at = SPLIT_ROW_FROM - 1;
    assert.deepEqual(d.predictTokens(), [], "the draft row would be at SPLIT_ROW_FROM");
    d.pushTokens(t([13]));
    assert.equal(d.hitRate() > 0, true, "the shadow proposal is still counted");
  });

  test("auto: drafts only while 1 + estimated hit rate exceeds the step cost, and only alone", () => {
    const record = new LookupRecord();
    let others = false;
    const cheap = start(policy({mode: "auto", stepCost: 1.3, record, othersGenerating: () => others}));
    cheap.predictTokens();
    cheap.pushTokens(t([10]));
    cheap.predictTokens();
    cheap.pushTokens(t([11]));
    assert.equal(cheap.hitRate(), 0.5, "nothing known yet: even odds");
    assert.deepEqual(cheap.predictTokens(), [12], "1.5 > 1.3");
    others = true;
    cheap.pushTokens(t([12]));
    assert.deepEqual(cheap.predictTokens(), [], "another region is generating: the draft step would go alone, not beside it");

    const dear = start(policy({mode: "auto", stepCost: 1.9, record: new LookupRecord()}));
    dear.predictTokens();
    dear.pushTokens(t([10]));
    dear.predictTokens();
    dear.pushTokens(t([11]));
    assert.deepEqual(dear.predictTokens(), [], "1.5 < 1.9");
    // A run that keeps copying raises its estimate until drafting pays even at 1.9.
    let drafted = 0;
    for (let tok = 12; tok <= 17; tok++) {
      dear.pushTokens(t([tok]));
      if (dear.predictTokens().length > 0) drafted++;
    }
    assert.ok(dear.hitRate() > 0.7, `estimate ${dear.hitRate()}`);
    assert.equal(drafted, 0, "(k + 4) / (k + 8) after k hits stays below 0.9 for these six");
  });

  test("the estimate: the run's own shadow record pulled towards the rate of the runs before it", () => {
    const record = new LookupRecord();
    record.proposals = 100;
    record.hits = 90;
    const d = start(policy({mode: "auto", stepCost: 1.85, record}));
    assert.ok(Math.abs(d.hitRate() - 0.9) < 1e-9);
    d.predictTokens();
    d.pushTokens(t([10]));
    d.predictTokens();
    d.pushTokens(t([11]));
    assert.deepEqual(d.predictTokens(), [12], "1 + 0.9 > 1.85: a prior this good drafts at once");
    d.pushTokens(t([50])); // miss
    assert.ok(Math.abs(d.hitRate() - (0 + 8 * 0.9) / 9) < 1e-9, "the prior is fixed when the run starts");
    assert.equal(record.proposals, 101, "the engine-wide record moves for later runs");
    assert.equal(record.hits, 90);
  });
});
