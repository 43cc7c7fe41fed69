// The classifier pattern's rule 7 on both routes, and the JS sampler used when logprobs are asked for.

import {createMemoryLogger} from "../../../../src/observability/log.ts";
import {newCounters} from "../../../../src/observability/counters.ts";
import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {decodeChat} from "../../../../src/api/dialects/chat/decode.ts";
import {SchemaCache} from "../../../../src/grammar/index.ts";
import {decodeCompletion} from "../../../../src/api/dialects/completions/decode.ts";
import {penalize, pickToken, seededRandom} from "../../../../src/engine/logit-sampler.ts";
import {DEFAULT_SAMPLING} from "../../../../src/api/fields/common.ts";
import {apiErrorOf} from "../../../fixtures/api-error.ts";

const ctx = {requestId: "r", signal: new AbortController().signal, maxTokensCap: 1000, schemas: new SchemaCache(), grammarEnabled: true, strictTools: true, logger: createMemoryLogger(), counters: newCounters()};
const messages = [{role: "user", content: "Is this good?"}, {role: "assistant", content: "Answer:"}];
const scoring = {messages, continue_final_message: true, add_generation_prompt: false, max_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 5};
const chatError = (over: object) => apiErrorOf(() => decodeChat({...scoring, ...over}, ctx));
const cmplError = (body: object) => apiErrorOf(() => decodeCompletion(body, ctx));

describe("rule 7 on the chat route", () => {
  test("the classifier request shape is accepted", () => {
    const d = decodeChat(scoring, ctx);
    assert.deepEqual(d.request.logprobs, {top: 5});
    assert.equal(d.request.maxTokens, 1);
    assert.equal(d.request.prompt.kind === "chat" && d.request.prompt.continueFinalMessage, true);
  });
  test("logprobs or top_logprobs with stream", () => {
    const e = chatError({stream: true});
    assert.equal(e.status, 400);
    assert.equal(e.message, "logprobs: log probabilities are returned on non-streamed requests only; send stream: false");
  });
  test("n above 1", () => assert.equal(chatError({n: 2}).message, "n: only one choice per request is supported (n = 1)"));
  test("logprobs with response_format", () => {
    assert.equal(chatError({response_format: {type: "json_object"}}).message, "logprobs: log probabilities cannot be combined with response_format");
  });
  test("top_logprobs with max_tokens above 1, at any temperature", () => {
    assert.equal(chatError({max_tokens: 2}).message, "top_logprobs: alternatives are for scoring one token; send max_tokens: 1 (got max_tokens 2)");
    assert.equal(chatError({max_tokens: 2, temperature: 0.7}).param, "top_logprobs");
    assert.equal(chatError({max_tokens: undefined}).message, "top_logprobs: alternatives are for scoring one token; send max_tokens: 1 (got no budget (unlimited))");
  });
  test("logprobs at temperature 0 with max_tokens above 1; allowed when sampling", () => {
    const e = chatError({top_logprobs: undefined, max_tokens: 5});
    assert.match(e.message, /^logprobs: at temperature 0 log probabilities are for scoring one token; send max_tokens: 1 \(got max_tokens 5\)/);
    const sampled = decodeChat({...scoring, top_logprobs: undefined, max_tokens: 5, temperature: 0.8}, ctx);
    assert.deepEqual(sampled.request.logprobs, {top: 0});
  });
  test("top_logprobs above 20; 20 is fine", () => {
    assert.equal(chatError({top_logprobs: 21}).message, "top_logprobs: at most 20 alternatives per token (got 21)");
    assert.deepEqual(decodeChat({...scoring, top_logprobs: 20}, ctx).request.logprobs, {top: 20});
  });
  test("top_logprobs without logprobs: true", () => {
    assert.equal(chatError({logprobs: false}).message, "top_logprobs: needs logprobs: true");
  });
});

describe("rule 7 on the completions route (logprobs = number of alternatives)", () => {
  test("served for one token; 0 alternatives gives the chosen token only", () => {
    assert.deepEqual(decodeCompletion({prompt: "x", logprobs: 20, max_tokens: 1, temperature: 0}, ctx).request.logprobs, {top: 20});
    assert.deepEqual(decodeCompletion({prompt: "x", logprobs: 0, max_tokens: 1, temperature: 0}, ctx).request.logprobs, {top: 0});
    assert.equal(decodeCompletion({prompt: "x"}, ctx).request.logprobs, null);
  });
  test("refusals", () => {
    assert.equal(cmplError({prompt: "x", logprobs: 21, max_tokens: 1}).message, "logprobs: at most 20 alternatives per token (got 21)");
    assert.equal(cmplError({prompt: "x", logprobs: 2, max_tokens: 1, stream: true}).message,
      "logprobs: log probabilities are returned on non-streamed requests only; send stream: false");
    assert.match(cmplError({prompt: "x", logprobs: 0, max_tokens: 3, temperature: 0}).message, /^logprobs: at temperature 0/);
  });
});

describe("JS sampler over raw logits", () => {
  const s = {...DEFAULT_SAMPLING, seed: 7};
  const cands = [{token: 1, logit: 2}, {token: 2, logit: 5}, {token: 3, logit: 4.9}, {token: 4, logit: -3}];
  test("greedy at temperature 0 takes the highest logit", () => {
    assert.equal(pickToken(cands, {...s, temperature: 0}, seededRandom(1), []), 2);
  });
  test("the same seed draws the same tokens; the draw follows the distribution", () => {
    const draw = (seed: number) => {
      const r = seededRandom(seed);
      return Array.from({length: 50}, () => pickToken(cands, {...s, temperature: 1}, r, []));
    };
    assert.deepEqual(draw(42), draw(42));
    assert.notDeepEqual(draw(42), draw(43));
    const many = (() => {
      const r = seededRandom(5);
      return Array.from({length: 4000}, () => pickToken(cands, {...s, temperature: 1}, r, []));
    })();
    const share = many.filter((t) => t === 2).length / many.length;
    // p(2) = e^5 / (e^2 + e^5 + e^4.9 + e^-3) = 0.5114...; 4000 draws keep the share within ±0.04 of it.
    assert.ok(Math.abs(share - 0.5114) < 0.04, `share of token 2: ${share}`);
  });
  test("top_k 1 and min_p 1 leave only the best token", () => {
    assert.equal(pickToken(cands, {...s, temperature: 1, topK: 1}, seededRandom(3), []), 2);
    assert.equal(pickToken(cands, {...s, temperature: 1, topK: 0, minP: 1}, seededRandom(3), []), 2);
  });
  test("top_p keeps the smallest set reaching p", () => {
    const picks = new Set(Array.from({length: 200}, (_, i) => pickToken(cands, {...s, temperature: 1, topP: 0.5}, seededRandom(i), [])));
    assert.deepEqual([...picks], [2], "p(2) alone is 0.511 >= 0.5");
  });
  test("penalties follow llama.cpp: repeat divides positive logits, presence and frequency subtract", () => {
    const out = penalize([{token: 1, logit: 4}, {token: 2, logit: -2}, {token: 3, logit: 1}], {...s, repeatPenalty: 2, presencePenalty: 0.5, frequencyPenalty: 0.25}, [1, 1, 2]);
    assert.deepEqual(out, [{token: 1, logit: 4 / 2 - 2 * 0.25 - 0.5}, {token: 2, logit: -2 * 2 - 0.25 - 0.5}, {token: 3, logit: 1}]);
  });
});
