import assert from "node:assert/strict";
import {test} from "node:test";
import {LONE_STEP_ONE_THREAD_FROM, threadsForBatch} from "../../src/engine/llama/decode-threads.ts";

const threads = {prompt: 2, decode: 2};

test("a prompt piece runs on every thread, wherever its sequence is", () => {
  assert.equal(threadsForBatch({piece: true, stepSequences: 1, lonePosition: 5000}, threads), 2);
  assert.equal(threadsForBatch({piece: true, stepSequences: 1, lonePosition: 0}, {prompt: 2, decode: 1}), 2);
});

test("decode steps of several sequences run on the measured decode threads at any length", () => {
  assert.equal(threadsForBatch({piece: false, stepSequences: 3, lonePosition: Infinity}, threads), 2);
  assert.equal(threadsForBatch({piece: false, stepSequences: 2, lonePosition: Infinity}, {prompt: 2, decode: 1}), 1);
});

test("a lone step runs on the decode threads below the split-attention edge and on one thread from it", () => {
  assert.equal(threadsForBatch({piece: false, stepSequences: 1, lonePosition: LONE_STEP_ONE_THREAD_FROM - 1}, threads), 2);
  assert.equal(threadsForBatch({piece: false, stepSequences: 1, lonePosition: LONE_STEP_ONE_THREAD_FROM}, threads), 1);
  assert.equal(threadsForBatch({piece: false, stepSequences: 1, lonePosition: 4000}, threads), 1);
  // An unknown sequence is treated as long: one thread is always exact.
  assert.equal(threadsForBatch({piece: false, stepSequences: 1, lonePosition: Infinity}, threads), 1);
  // The edge stays below the first position where llama.cpp's padded window reaches 512 cells (256 used).
  assert.ok(LONE_STEP_ONE_THREAD_FROM <= 255);
});
