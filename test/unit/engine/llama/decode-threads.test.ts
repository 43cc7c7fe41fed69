import assert from "node:assert/strict";
import {test} from "node:test";
import {aloneOnEveryThread, threadsForBatch} from "../../../../src/engine/llama/decode-threads.ts";
import {SPLIT_ROW_FROM} from "../../../../src/engine/kv/row-classes.ts";

test("a prompt piece runs on every thread", () => {
  assert.equal(threadsForBatch({piece: true, aloneStep: false}, {prompt: 2, decode: 2}), 2);
  assert.equal(threadsForBatch({piece: true, aloneStep: false}, {prompt: 2, decode: 1}), 2);
});

test("batched decode steps run on the measured decode threads", () => {
  assert.equal(threadsForBatch({piece: false, aloneStep: false}, {prompt: 2, decode: 2}), 2);
  assert.equal(threadsForBatch({piece: false, aloneStep: false}, {prompt: 2, decode: 1}), 1);
});

test("a one-token evaluation goes alone on every thread from the split-row position on, whatever the decode threads", () => {
  assert.equal(aloneOnEveryThread(SPLIT_ROW_FROM - 1), false);
  assert.equal(aloneOnEveryThread(SPLIT_ROW_FROM), true);
  assert.equal(aloneOnEveryThread(20000), true);
  // An unknown sequence's position counts as long: alone is always exact.
  assert.equal(aloneOnEveryThread(Infinity), true);
  assert.equal(threadsForBatch({piece: false, aloneStep: true}, {prompt: 2, decode: 1}), 2);
  // The edge stays below the first position where llama.cpp's padded window reaches 512 cells (256 used).
  assert.ok(SPLIT_ROW_FROM <= 255);
});
