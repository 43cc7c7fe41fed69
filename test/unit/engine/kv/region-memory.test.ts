// The reuse rule: a prompt reuses a region's KV only up to a cut both evaluation plans share (with every
// earlier cut shared), at least one token is always left to evaluate, and generated tokens count only once
// they are sealed into the plan.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {emptyMemory, exactLength, piecesFrom, planCuts, reusable, reusableByPieces, reusableByPrefix} from "../../../../src/engine/kv/region-memory.ts";

const seq = (n: number, from = 0) => Array.from({length: n}, (_, i) => from + i);

describe("planCuts", () => {
  test("multiples of the piece, the boundaries inside, and the end", () => {
    assert.deepEqual(planCuts(200, 64), [64, 128, 192, 200]);
    assert.deepEqual(planCuts(200, 64, [10, 64, 150, 0, 200, 300]), [10, 64, 128, 150, 192, 200]);
    assert.deepEqual(planCuts(128, 64), [64, 128]);
    assert.deepEqual(planCuts(0, 64), []);
  });
  test("pieces follow the plan from a shared cut", () => {
    assert.deepEqual(piecesFrom([10, 64, 128, 150], 0), [[0, 10], [10, 64], [64, 128], [128, 150]]);
    assert.deepEqual(piecesFrom([10, 64, 128, 150], 64), [[64, 128], [128, 150]]);
  });
});

describe("reusableByPrefix (remote replicas: any shared prefix)", () => {
  const memory = {tokens: [1, 2, 3, 4, 5, 6], cuts: [6]};
  test("the common prefix, wherever it ends, capped by the exact part and one prompt token short of the prompt", () => {
    assert.deepEqual(reusableByPrefix(memory, [1, 2, 3, 9, 9]), {length: 3, common: 3});
    assert.deepEqual(reusableByPrefix(memory, [1, 2, 3, 4, 5, 6, 7, 8]), {length: 6, common: 6});
    assert.deepEqual(reusableByPrefix(memory, [1, 2, 3, 4, 5, 6]), {length: 5, common: 6}, "the last prompt token is evaluated for its logits");
    assert.deepEqual(reusableByPrefix({tokens: [1, 2, 3, 4], cuts: [2]}, [1, 2, 3, 4, 5]), {length: 2, common: 4}, "past the exact part is not reused");
    assert.deepEqual(reusableByPrefix(memory, [7]), {length: 0, common: 0});
    assert.deepEqual(reusableByPrefix({tokens: [], cuts: []}, []), {length: 0, common: 0});
  });
  test("reusable() takes the prefix rule when the plan says so, ignoring the plan's cuts", () => {
    assert.equal(reusable(memory, [1, 2, 3, 4, 9], {cuts: [5], match: "prefix"}).length, 4);
    assert.equal(reusable(memory, [1, 2, 3, 4, 9], {cuts: [5], match: "pieces"}).length, 0);
  });
});

describe("reusableByPieces (reuse matched by pieces)", () => {
  test("the largest shared cut within the common prefix", () => {
    const memory = {tokens: seq(200), cuts: planCuts(200, 64)};
    const prompt = [...seq(150), 9999];
    assert.deepEqual(reusableByPieces(memory, prompt, planCuts(prompt.length, 64)), {length: 128, common: 150});
    const short = [...seq(63), 9999];
    assert.equal(reusableByPieces(memory, short, planCuts(short.length, 64)).length, 0, "less than a piece → nothing");
  });
  test("a boundary both prompts mark is a resume point (the end of a shared system message)", () => {
    const system = 40;
    const a = [...seq(system), ...seq(30, 500)];
    const b = [...seq(system), ...seq(50, 900)];
    const memory = {tokens: a, cuts: planCuts(a.length, 64, [system])};
    assert.equal(reusableByPieces(memory, b, planCuts(b.length, 64, [system])).length, 40);
    assert.equal(reusableByPieces(memory, b, planCuts(b.length, 64)).length, 0, "without the boundary in the new plan the cut is not shared");
  });
  test("a cut the region has but the prompt's plan lacks stops the reuse there", () => {
    const memory = {tokens: seq(300), cuts: [20, 64, 128, 192, 256, 300]};
    assert.equal(reusableByPieces(memory, seq(400), planCuts(400, 64)).length, 0, "the region's first piece was cut at 20, the prompt's is not");
    assert.equal(reusableByPieces(memory, seq(400), planCuts(400, 64, [20])).length, 256, "300 is not a cut of the prompt's plan");
    assert.equal(reusableByPieces(memory, seq(400), planCuts(400, 64, [20, 300])).length, 300);
  });
  test("never past the exact part, and at least one token is left", () => {
    assert.equal(reusableByPieces({tokens: seq(200), cuts: [64, 128]}, seq(300), planCuts(300, 64)).length, 128);
    assert.equal(reusableByPieces({tokens: seq(128), cuts: [64, 128]}, seq(128), planCuts(128, 64)).length, 64, "an identical prompt re-evaluates its last piece");
    assert.equal(reusableByPieces({tokens: seq(128), cuts: [64, 128]}, seq(129), planCuts(129, 64)).length, 128);
  });
  test("an empty memory reuses nothing", () => {
    assert.deepEqual(reusableByPieces(emptyMemory(), seq(500), planCuts(500, 64)), {length: 0, common: 0});
    assert.equal(exactLength(emptyMemory()), 0);
  });
  test("a sealed reply: the next turn reuses prompt and reply when it marks the reply's end", () => {
    const prompt1 = seq(100);
    const reply = seq(37, 700);
    const cuts = [...planCuts(100, 64, [30]), ...planCuts(137, 64).filter((c) => c > 100)];
    const memory = {tokens: [...prompt1, ...reply], cuts};
    const turn2 = [...prompt1, ...reply, 5, 6, 7, 8];
    const plan2 = planCuts(turn2.length, 64, [30, 100, 137]);
    assert.equal(reusableByPieces(memory, turn2, plan2).length, 137);
  });
});
