// Shared request fields: the token budget under its three names, sampling defaults and seeds, stop
// strings, and body validation turning the first zod issue into a 400 naming the field.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {ApiError} from "../../../../src/core/errors.ts";
import {apiErrorOf} from "../../../fixtures/api-error.ts";
import {BUDGET_ALIASES, DEFAULT_SAMPLING, decodeSampling, decodeStops, notYet, resolveBudget} from "../../../../src/api/fields/common.ts";
import {fieldPath, parseBody} from "../../../../src/api/fields/validate.ts";
import {chatRequestSchema} from "../../../../src/api/dialects/chat/schema.ts";

describe("resolveBudget", () => {
  test("the three aliases, in order", () => {
    assert.deepEqual([...BUDGET_ALIASES], ["max_tokens", "max_completion_tokens", "max_output_tokens"]);
  });

  test("each alias alone gives its value", () => {
    assert.equal(resolveBudget({max_tokens: 10}, 100, "refuse"), 10);
    assert.equal(resolveBudget({max_completion_tokens: 11}, 100, "refuse"), 11);
    assert.equal(resolveBudget({max_output_tokens: 12}, 100, "refuse"), 12);
  });

  test("no budget at all gives null; null and undefined are ignored", () => {
    assert.equal(resolveBudget({}, 100, "refuse"), null);
    assert.equal(resolveBudget({max_tokens: null, max_completion_tokens: undefined, max_output_tokens: null}, 100, "refuse"), null);
    assert.equal(resolveBudget({max_tokens: null, max_completion_tokens: 7}, 100, "refuse"), 7);
    assert.equal(resolveBudget({max_tokens: 5, max_completion_tokens: null, max_output_tokens: undefined}, 100, "refuse"), 5);
  });

  test("two or three aliases with equal values are fine", () => {
    assert.equal(resolveBudget({max_tokens: 20, max_completion_tokens: 20}, 100, "refuse"), 20);
    assert.equal(resolveBudget({max_tokens: 20, max_completion_tokens: 20, max_output_tokens: 20}, 100, "refuse"), 20);
  });

  test("two aliases that disagree: 400 naming both fields and both values", () => {
    const err = apiErrorOf(() => resolveBudget({max_tokens: 10, max_completion_tokens: 20}, 100, "refuse"));
    assert.equal(err.status, 400);
    assert.equal(err.kind, "invalid_request");
    assert.equal(err.message, "max_tokens (10) and max_completion_tokens (20) are two names for the same token budget and disagree; send one of them");
    assert.equal(err.param, "max_completion_tokens");
  });

  test("disagreement is refused even in clamp mode and even above the cap", () => {
    const err = apiErrorOf(() => resolveBudget({max_completion_tokens: 500, max_output_tokens: 600}, 100, "clamp"));
    assert.equal(err.status, 400);
    assert.match(err.message, /^max_completion_tokens \(500\) and max_output_tokens \(600\)/);
  });

  test("above the cap with refuse: 400 naming the field and the cap", () => {
    const err = apiErrorOf(() => resolveBudget({max_completion_tokens: 101}, 100, "refuse"));
    assert.equal(err.status, 400);
    assert.equal(err.message, "max_completion_tokens: 101 is above this server's max_tokens_cap (100); ask for at most 100");
    assert.equal(err.param, "max_completion_tokens");
  });

  test("exactly at the cap is accepted", () => {
    assert.equal(resolveBudget({max_tokens: 100}, 100, "refuse"), 100);
  });

  test("above the cap with clamp: the cap", () => {
    assert.equal(resolveBudget({max_output_tokens: 5000}, 100, "clamp"), 100);
    assert.equal(resolveBudget({max_output_tokens: 50}, 100, "clamp"), 50);
  });
});

describe("decodeSampling", () => {
  test("defaults: OpenAI temperature/top_p plus top_k 40", () => {
    const s = decodeSampling({seed: 1});
    assert.deepEqual(s, {temperature: 1, topK: 40, topP: 1, minP: 0, seed: 1, presencePenalty: 0, frequencyPenalty: 0, repeatPenalty: 1, repeatLastN: 64});
    assert.deepEqual(DEFAULT_SAMPLING, {temperature: 1, topK: 40, topP: 1, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repeatPenalty: 1, repeatLastN: 64});
  });

  test("given values are mapped to their fields; zero is kept, null falls back", () => {
    const s = decodeSampling({temperature: 0, top_k: 0, top_p: 0.9, min_p: 0.05, presence_penalty: -1, frequency_penalty: 0.5, repeat_penalty: 1.1, repeat_last_n: -1, seed: 7});
    assert.deepEqual(s, {temperature: 0, topK: 0, topP: 0.9, minP: 0.05, seed: 7, presencePenalty: -1, frequencyPenalty: 0.5, repeatPenalty: 1.1, repeatLastN: -1});
    assert.equal(decodeSampling({temperature: null, seed: 0}).temperature, 1);
  });

  test("a seed is passed through; 0 stays 0", () => {
    assert.equal(decodeSampling({seed: 42}).seed, 42);
    assert.equal(decodeSampling({seed: 0}).seed, 0);
    assert.equal(decodeSampling({seed: 2 ** 32 - 1}).seed, 4294967295);
  });

  test("a negative or too-large seed is reduced to uint32 (two's complement)", () => {
    assert.equal(decodeSampling({seed: -1}).seed, 4294967295);
    assert.equal(decodeSampling({seed: -2}).seed, 4294967294);
    assert.equal(decodeSampling({seed: 2 ** 32}).seed, 0);
    assert.equal(decodeSampling({seed: 2 ** 32 + 5}).seed, 5);
    assert.equal(decodeSampling({seed: -Number.MAX_SAFE_INTEGER}).seed, Number(BigInt.asUintN(32, BigInt(-Number.MAX_SAFE_INTEGER))));
    assert.equal(decodeSampling({seed: -Number.MAX_SAFE_INTEGER}).seed, 1);
  });

  test("no seed: a random uint32, not the same every time", () => {
    const seeds = new Set<number>();
    for (let i = 0; i < 5; i++) {
      const s = decodeSampling({}).seed;
      assert.ok(Number.isInteger(s), String(s));
      assert.ok(s >= 0 && s < 2 ** 32, String(s));
      seeds.add(s);
    }
    assert.ok(seeds.size > 1, "five unseeded requests all got the same seed");
    const nullSeed = decodeSampling({seed: null}).seed;
    assert.ok(Number.isInteger(nullSeed) && nullSeed >= 0 && nullSeed < 2 ** 32);
  });
});

describe("decodeStops", () => {
  test("null/undefined → none; a string → one; an array as is", () => {
    assert.deepEqual(decodeStops(null), []);
    assert.deepEqual(decodeStops(undefined), []);
    assert.deepEqual(decodeStops("###"), ["###"]);
    assert.deepEqual(decodeStops(["a", "b"]), ["a", "b"]);
    assert.deepEqual(decodeStops([]), []);
  });
});

describe("notYet", () => {
  test("400 naming the field and saying it is not available in this build", () => {
    const err = apiErrorOf(() => notYet("tools", "tool calling"));
    assert.equal(err.status, 400);
    assert.equal(err.param, "tools");
    assert.equal(err.message, "tools: tool calling is not available in this build of the server (see GET /health)");
  });
});

describe("parseBody with the chat schema", () => {
  const ok = {messages: [{role: "user", content: "hi"}]};

  test("a valid body is returned parsed, unknown fields kept", () => {
    const body = parseBody(chatRequestSchema, {...ok, temperature: 0.5, vendor_extra: 1});
    assert.equal(body.temperature, 0.5);
    assert.deepEqual(body.messages, [{role: "user", content: "hi"}]);
    assert.equal((body as Record<string, unknown>).vendor_extra, 1);
  });

  test("wrong type for temperature", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {...ok, temperature: "hot"}));
    assert.equal(err.status, 400);
    assert.equal(err.param, "temperature");
    assert.match(err.message, /^temperature: /);
    assert.equal(err.message, "temperature: must be a number");
  });

  test("temperature out of range names the bound", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {...ok, temperature: 3}));
    assert.equal(err.message, "temperature: must be at most 2");
  });

  test("unknown role lists the roles", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {messages: [{role: "wizard", content: "hi"}]}));
    assert.equal(err.status, 400);
    assert.equal(err.param, "messages[0].role");
    assert.equal(err.message, 'messages[0].role: must be one of "system", "developer", "user", "assistant", "tool"');
  });

  test("path of a later message", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {messages: [{role: "user", content: "a"}, {role: "user", content: 5}]}));
    assert.match(err.message, /^messages\[1\]\.content: /);
  });

  test("empty messages: at least 1 item", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {messages: []}));
    assert.equal(err.status, 400);
    assert.equal(err.message, "messages: must have at least 1 item(s)");
  });

  test("missing messages: required", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {}));
    assert.equal(err.message, "messages: is required (an array)");
  });

  test("a budget that is not an integer", () => {
    const err = apiErrorOf(() => parseBody(chatRequestSchema, {...ok, max_tokens: 1.5}));
    assert.equal(err.message, "max_tokens: must be an integer");
    const zero = apiErrorOf(() => parseBody(chatRequestSchema, {...ok, max_tokens: 0}));
    assert.equal(zero.message, "max_tokens: must be at least 1");
  });

  test("non-object bodies: 400 with no param", () => {
    for (const body of [undefined, null, "text", 42, true, [ok]]) {
      const err = apiErrorOf(() => parseBody(chatRequestSchema, body));
      assert.equal(err.status, 400, JSON.stringify(body));
      assert.equal(err.message, "the request body must be a JSON object");
      assert.equal(err.param, null);
    }
  });
});

describe("fieldPath", () => {
  test("dots between names, brackets for indexes", () => {
    assert.equal(fieldPath([]), "");
    assert.equal(fieldPath(["messages", 0, "content", 2, "type"]), "messages[0].content[2].type");
    assert.equal(fieldPath([0, "a"]), "[0].a");
  });
});
