// The reuse rule: only whole aligned prompt pieces of a region's last prompt are reused, at least one
// token is always left to evaluate, and a request goes to the free region holding the most of its prompt.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {bestRegion, emptyMemory, reusableLength} from "../../src/engine/llama/region-memory.ts";

const seq = (n: number, from = 0) => Array.from({length: n}, (_, i) => from + i);

describe("reusableLength", () => {
  test("the common prefix cut down to whole pieces", () => {
    const memory = {tokens: seq(200), aligned: 192};
    assert.equal(reusableLength(memory, [...seq(150), 9999], 64), 128, "150 common tokens → 2 whole pieces");
    assert.equal(reusableLength(memory, [...seq(63), 9999], 64), 0, "less than a piece → nothing");
    assert.equal(reusableLength(memory, [...seq(64), 9999], 64), 64);
  });
  test("never past what the region holds in aligned pieces", () => {
    assert.equal(reusableLength({tokens: seq(200), aligned: 128}, seq(300), 64), 128);
    assert.equal(reusableLength({tokens: seq(200), aligned: 0}, seq(300), 64), 0);
  });
  test("at least one prompt token is left to evaluate", () => {
    assert.equal(reusableLength({tokens: seq(128), aligned: 128}, seq(128), 64), 64, "an identical 128-token prompt re-evaluates its last piece");
    assert.equal(reusableLength({tokens: seq(128), aligned: 128}, seq(129), 64), 128);
  });
  test("an empty memory reuses nothing", () => {
    assert.equal(reusableLength(emptyMemory(), seq(500), 64), 0);
  });
});

describe("bestRegion", () => {
  const memories = [
    {tokens: seq(300, 1000), aligned: 256},
    {tokens: seq(300), aligned: 128},
    {tokens: seq(300), aligned: 256},
    emptyMemory(),
  ];
  test("the free region holding the most of the prompt", () => {
    assert.equal(bestRegion([0, 1, 2, 3], memories, seq(290), 64), 2);
    assert.equal(bestRegion([0, 1, 3], memories, seq(290), 64), 1);
  });
  test("no reuse anywhere: the lowest free id", () => {
    assert.equal(bestRegion([1, 3], memories, seq(100, 5000), 64), 1);
    assert.equal(bestRegion([3], memories, seq(290), 64), 3);
  });
});
