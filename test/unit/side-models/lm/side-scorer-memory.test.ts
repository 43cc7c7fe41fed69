// A side-model context that does not fit in memory is that request's 503 (the server keeps running), and
// any other failure to make a context is passed on unchanged.

import assert from "node:assert/strict";
import {test} from "node:test";
import {InsufficientMemoryError} from "node-llama-cpp";
import {toApiError} from "../../../../src/api/error-body.ts";
import {EngineMemoryError} from "../../../../src/engine/errors.ts";
import {LmScorer} from "../../../../src/side-models/lm/scorer.ts";
import {SideExecutor} from "../../../../src/side-models/executor.ts";

function fakeModel(fail: Error) {
  return {trainContextSize: 8192, createContext: async () => {
    throw fail;
  }} as never;
}
const side = {executor: new SideExecutor({queueLimit: 1, timeoutMs: 1000}), threads: 1} as never;

test("InsufficientMemoryError while making a scorer context becomes 503 insufficient_memory with Retry-After", async () => {
  await assert.rejects(LmScorer.create(fakeModel(new InsufficientMemoryError("not enough RAM")), side, 4097), (raw: unknown) => {
    assert.ok(raw instanceof EngineMemoryError);
    const err = toApiError(raw);
    assert.equal(err.status, 503);
    assert.equal(err.code, "insufficient_memory");
    assert.equal(err.headers["Retry-After"], "5");
    assert.match(err.message, /4097-position context.*not enough RAM/);
    return true;
  });
});

test("another failure to make a context is not dressed up as a memory problem", async () => {
  await assert.rejects(LmScorer.create(fakeModel(new Error("Failed to create context")), side, 4097), /^Error: Failed to create context$/);
});
