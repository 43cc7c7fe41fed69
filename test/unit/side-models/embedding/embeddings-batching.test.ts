// The spec's batching rule (planPasses) and the embeddings body decode, without a model.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {planPasses} from "../../../../src/side-models/embedding/batch-plan.ts";
import {decodeEmbeddings} from "../../../../src/api/side/embeddings/decode.ts";
import {toBase64, truncateAndNormalize} from "../../../../src/api/side/embeddings/route.ts";
import {ApiError} from "../../../../src/core/errors.ts";

const n = (count: number, len: number) => Array.from({length: count}, () => len);

describe("batching plan", () => {
  test("6 inputs of up to 128 tokens batch; 5 do not", () => {
    assert.deepEqual(planPasses(n(6, 128), true), [[0, 1, 2, 3, 4, 5]]);
    assert.deepEqual(planPasses(n(5, 128), true), [[0], [1], [2], [3], [4]]);
  });

  test("with a longer input (up to 512), 5 batch; 4 do not", () => {
    assert.deepEqual(planPasses([...n(4, 10), 512], true), [[0, 1, 2, 3, 4]]);
    assert.deepEqual(planPasses([...n(3, 10), 129], true), [[0], [1], [2], [3]]);
  });

  test("a batch holds up to 8 inputs; leftovers too few for a batch run alone", () => {
    assert.deepEqual(planPasses(n(8, 20), true), [[0, 1, 2, 3, 4, 5, 6, 7]]);
    assert.deepEqual(planPasses(n(9, 20), true), [[0, 1, 2, 3, 4, 5, 6, 7], [8]]);
    assert.deepEqual(planPasses(n(14, 20), true), [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13]]);
  });

  test("inputs over 512 tokens never batch; SVC_NPU_EMB_BATCH=0 runs every input alone", () => {
    assert.deepEqual(planPasses([...n(3, 10), 513, ...n(3, 10)], true), [[0, 1, 2, 4, 5, 6], [3]]);
    assert.deepEqual(planPasses(n(8, 20), false), [[0], [1], [2], [3], [4], [5], [6], [7]]);
  });
});

describe("embeddings body", () => {
  const refused = (body: unknown, re: RegExp) => assert.throws(() => decodeEmbeddings(body, 384), (e: unknown) => e instanceof ApiError && e.status === 400 && re.test(e.message));

  test("token ids are refused; dimensions 32..native; encoding float or base64", () => {
    refused({model: "m", input: [1, 2, 3]}, /^input: Input is text, not token ids/);
    refused({model: "m", input: ["a", [1, 2]]}, /^input\[1\]: Input is text, not token ids/);
    refused({model: "m", input: "a", dimensions: 31}, /^dimensions: must be an integer from 32 to 384/);
    refused({model: "m", input: "a", dimensions: 385}, /^dimensions: must be an integer from 32 to 384/);
    assert.equal(decodeEmbeddings({model: "m", input: "a", dimensions: 32}, 384).dimensions, 32);
    assert.equal(decodeEmbeddings({model: "m", input: "a", dimensions: 384}, 384).dimensions, 384);
    refused({model: "m", input: "a", encoding_format: "int8"}, /^encoding_format: must be "float" or "base64"/);
  });

  test("the query form: Instruct line, newline, Query:; documents as sent", () => {
    assert.deepEqual(decodeEmbeddings({model: "m", input: "cats", prompt_name: "query", instruction: "Find pets"}, 384).texts, ["Instruct: Find pets\nQuery:cats"]);
    assert.match(decodeEmbeddings({model: "m", input: "cats", prompt_name: "query"}, 384).texts[0]!, /^Instruct: Given a web search query.*\nQuery:cats$/);
    assert.deepEqual(decodeEmbeddings({model: "m", input: ["cats"], prompt_name: "document"}, 384).texts, ["cats"]);
    refused({model: "m", input: "cats", instruction: "x"}, /^instruction: applies to queries only/);
  });

  test("truncation renormalises; base64 is little-endian float32", () => {
    const v = truncateAndNormalize([3, 4, 12], 2);
    assert.deepEqual(Array.from(v), [Math.fround(0.6), Math.fround(0.8)]);
    const b = Buffer.from(toBase64(v), "base64");
    assert.deepEqual([b.readFloatLE(0), b.readFloatLE(4)], Array.from(v));
  });
});
