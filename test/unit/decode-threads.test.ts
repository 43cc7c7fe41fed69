import assert from "node:assert/strict";
import {test} from "node:test";
import {LONE_STEP_ONE_THREAD_FROM, loneSteps, threadsForBatch} from "../../src/engine/llama/decode-threads.ts";

const threads = {prompt: 2, decode: 2};

test("a prompt piece runs on every thread, wherever its sequence is", () => {
  assert.equal(threadsForBatch({piece: true, lonePosition: 5000}, threads), 2);
  assert.equal(threadsForBatch({piece: true, lonePosition: -1}, {prompt: 2, decode: 1}), 2);
});

test("decode steps with no lone row run on the measured decode threads at any length", () => {
  assert.equal(threadsForBatch({piece: false, lonePosition: -1}, threads), 2);
  assert.equal(threadsForBatch({piece: false, lonePosition: -1}, {prompt: 2, decode: 1}), 1);
});

test("a lone row runs on the decode threads below the split-attention edge and on one thread from it", () => {
  assert.equal(threadsForBatch({piece: false, lonePosition: LONE_STEP_ONE_THREAD_FROM - 1}, threads), 2);
  assert.equal(threadsForBatch({piece: false, lonePosition: LONE_STEP_ONE_THREAD_FROM}, threads), 1);
  assert.equal(threadsForBatch({piece: false, lonePosition: 4000}, threads), 1);
  // An unknown sequence is treated as long: one thread is always exact.
  assert.equal(threadsForBatch({piece: false, lonePosition: Infinity}, threads), 1);
  // The edge stays below the first position where llama.cpp's padded window reaches 512 cells (256 used).
  assert.ok(LONE_STEP_ONE_THREAD_FROM <= 255);
});

test("lone rows: sequences with no consecutive neighbour in the batch (llama.cpp's ubatches hold consecutive ids)", () => {
  assert.deepEqual(loneSteps([2]), [2]);
  assert.deepEqual(loneSteps([0, 1, 2, 3]), []);
  assert.deepEqual(loneSteps([0, 2, 3]), [0], "a gap at 1: {0} and {2, 3}");
  assert.deepEqual(loneSteps([3, 0]), [0, 3]);
  assert.deepEqual(loneSteps([1, 2, 0]), [], "order in the batch does not matter");
  assert.deepEqual(loneSteps([0, 1, 3]), [3]);
  assert.deepEqual(loneSteps([]), []);
});
