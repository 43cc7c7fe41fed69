// Decisions on the test model (behind decider-0.8b, and the reranker for the pairings: these tests check the
// shapes, the option probabilities' arithmetic and the refusals, never which option wins): the chat route
// through the openai client (every option shape, logprobs, streaming), POST /v1/decide (choice, score, noul,
// 422s) and wrong pairings. SVC_NPU_DEC_RESUME 0 / 1 / 2 giving bit-identical answers, and the text limit at its edge, are in
// the slow tier (test/slow/decision-resume.test.ts, test/slow/decision-limits.test.ts).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {DECIDE, REVIEW} from "./decide-fixture.ts";
import {post, readSse, startServer, TIMING_FIELDS, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

let s0: RunningServer;
let s2: RunningServer;

const BASE = {SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1800"};

before(async () => {
  const model = await testModelPath();
  [s0, s2] = await Promise.all([
    startServer({...BASE, SVC_NPU_MODELS: `decider-0.8b=${model}`, SVC_NPU_DEC_RESUME: "0"}),
    startServer({...BASE, SVC_NPU_MODELS: `decider-0.8b=${model},nx3-reranker-0.6b=${model}`, SVC_NPU_DEC_RESUME: "2", SVC_NPU_DEC_ENTRIES: "2"}),
  ]);
});
after(async () => {
  await Promise.all([s0?.stop(), s2?.stop()]);
});


function decision(schema: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    model: "decider-0.8b",
    messages: [{role: "user" as const, content: REVIEW}],
    response_format: {type: "json_schema" as const, json_schema: {name: "judgement", description: "What is the sentiment of the review?", schema}},
    logprobs: true,
    ...extra,
  };
}

/** Checks a chat decision body: probabilities sum to 1, the answer is the argmax, timings and usage present. */
function checkDecision(body: any, options: string[]): {content: string; probs: Map<string, number>} {
  const choice = body.choices[0];
  assert.equal(choice.finish_reason, "stop");
  for (const f of TIMING_FIELDS) assert.equal(typeof body.timings[f], "number", `timings.${f}`);
  assert.ok(body.usage.prompt_tokens > 0);
  const top = choice.logprobs.content[0].top_logprobs as {token: string; logprob: number}[];
  assert.deepEqual(top.map((t) => t.token).sort(), [...options].sort(), "one entry per option");
  const sum = top.reduce((a, t) => a + Math.exp(t.logprob), 0);
  assert.ok(Math.abs(sum - 1) < 1e-9, `option probabilities sum to ${sum}`);
  const best = top.reduce((a, b) => (b.logprob > a.logprob ? b : a));
  assert.equal(choice.message.content, best.token, "the answer is the most likely option");
  assert.equal(choice.logprobs.content[0].token, choice.message.content);
  return {content: choice.message.content, probs: new Map(top.map((t) => [t.token, Math.exp(t.logprob)]))};
}

describe("decisions on the chat route (openai client)", () => {
  test("enum: the answer is the most likely option; top_logprobs carry every option, summing to 1", async () => {
    const r = await s2.client.chat.completions.create(decision({type: "string", enum: ["positive", "negative", "neutral"]}) as never);
    checkDecision(r, ['"positive"', '"negative"', '"neutral"']);
    assert.equal(r.model, "decider-0.8b");
  });

  test("oneOf of {const, description}", async () => {
    const r = await s2.client.chat.completions.create(decision({oneOf: [{const: "pos", description: "the reviewer liked it"},
      {const: "neg", description: "the reviewer disliked it"}]}) as never);
    checkDecision(r, ['"pos"', '"neg"']);
  });

  test("{type: boolean} answers true or false", async () => {
    const body = decision({type: "boolean"});
    body.response_format.json_schema.description = "Did the reviewer like the film?";
    const r = await s2.client.chat.completions.create(body as never);
    const {content} = checkDecision(r, ["true", "false"]);
    assert.ok(content === "true" || content === "false");
  });

  test("an object with one property answers {\"prop\": option}", async () => {
    const r = await s2.client.chat.completions.create(decision({type: "object", properties: {sentiment: {enum: ["positive", "negative"]}}, required: ["sentiment"]}) as never);
    const {content} = checkDecision(r, ['{"sentiment":"positive"}', '{"sentiment":"negative"}']);
    assert.ok(["positive", "negative"].includes(JSON.parse(content).sentiment));
  });

  test("a system message carries the question when the schema has no description; sampling fields are ignored", async () => {
    const base = {
      model: "decider-0.8b",
      messages: [{role: "system", content: "What is the sentiment of the review?"}, {role: "user", content: REVIEW}],
      response_format: {type: "json_schema", json_schema: {name: "s", schema: {enum: ["positive", "negative"]}}},
      logprobs: true,
    };
    const plain = await post(`${s2.url}/v1/chat/completions`, base);
    assert.equal(plain.status, 200, plain.text);
    checkDecision(plain.body, ['"positive"', '"negative"']);
    const sampled = await post(`${s2.url}/v1/chat/completions`, {...base, temperature: 1.7, top_p: 0.3, seed: 99, presence_penalty: 1, frequency_penalty: 1});
    assert.equal(sampled.status, 200, sampled.text);
    assert.deepEqual(sampled.body.choices[0].logprobs, plain.body.choices[0].logprobs, "never sampled: the same numbers");
  });

  test("stream: one content chunk, the finish chunk, [DONE]; finalChatCompletion accepts it", async () => {
    const req = decision({enum: ["positive", "negative", "neutral"]});
    const whole = await s2.client.chat.completions.create(req as never);
    const final = await s2.client.chat.completions.stream({...req, stream: true} as never).finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, whole.choices[0]!.message.content);
    assert.equal(final.choices[0]!.finish_reason, "stop");
    const res = await fetch(`${s2.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({...req, stream: true, stream_options: {include_usage: true}})});
    const {data} = await readSse(res);
    assert.equal(data.at(-1), "[DONE]");
    const content = data.filter((d) => d !== "[DONE]" && d.choices[0]?.delta?.content !== undefined);
    assert.equal(content.length, 1, "one content chunk");
    assert.equal(content[0].choices[0].delta.content, whole.choices[0]!.message.content);
    assert.ok(content[0].choices[0].logprobs.content[0].top_logprobs.length === 3);
    assert.equal(data[1].choices[0].finish_reason, "stop");
    assert.ok(data[2].usage.prompt_tokens > 0);
  });

  test("2 and 10 options are served; 1 and 11 are refused naming the limit", async () => {
    const opts = (n: number) => Array.from({length: n}, (_, i) => `option ${i}`);
    for (const n of [2, 10]) {
      const r = await post(`${s2.url}/v1/chat/completions`, decision({enum: opts(n)}));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.choices[0].logprobs.content[0].top_logprobs.length, n);
    }
    for (const n of [1, 11]) {
      const r = await post(`${s2.url}/v1/chat/completions`, decision({enum: opts(n)}));
      assert.equal(r.status, 400);
      assert.match(r.body.error.message, /response_format\.json_schema\.schema\.enum: a decision takes 2 to 10 options/);
    }
    const oneOf = await post(`${s2.url}/v1/chat/completions`, decision({oneOf: opts(11).map((c) => ({const: c}))}));
    assert.equal(oneOf.status, 400);
    assert.match(oneOf.body.error.message, /2 to 10 options \(found 11\)/);
  });

  test("malformed decision requests are 400 naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{...decision({enum: ["a", "b"]}), response_format: undefined}, /^response_format: /],
      [decision({type: "object", properties: {a: {enum: ["x", "y"]}, b: {enum: ["x", "y"]}}}), /exactly one property/],
      [decision({type: "string"}), /schema: must be an enum/],
      [decision({enum: ["a", "a"]}), /options must differ/],
      [{...decision({enum: ["a", "b"]}), top_logprobs: 21}, /^top_logprobs: /],
      [{...decision({enum: ["a", "b"]}), messages: [{role: "user", content: [{type: "image_url", image_url: {url: "x"}}]}]}, /messages\[0\]\.content\[0\]/],
    ];
    for (const [body, re] of cases) {
      const r = await post(`${s2.url}/v1/chat/completions`, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error.message, re);
    }
  });
});


describe("POST /v1/decide", () => {
  test("choice, score and noul answers: probabilities sum to 1, choice is the argmax, score is the expected level", async () => {
    const r = await post(`${s0.url}/v1/decide`, DECIDE);
    assert.equal(r.status, 200, r.text);
    const {sentiment, stars, film} = r.body.answers;
    const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum(sentiment.probabilities) - 1) < 1e-9);
    const best = Object.entries(sentiment.probabilities as Record<string, number>).reduce((a, b) => (b[1] > a[1] ? b : a));
    assert.equal(sentiment.choice, best[0]);
    assert.equal(sentiment.confidence, best[1]);
    assert.deepEqual(Object.keys(stars.probabilities), ["0", "1", "2", "3"]);
    assert.deepEqual(stars.legend, {0: "none", 1: "one", 2: "two", 3: "three"});
    assert.ok(Math.abs(sum(stars.probabilities) - 1) < 1e-9);
    const expected = Object.entries(stars.probabilities as Record<string, number>).reduce((a, [k, p]) => a + Number(k) * p, 0);
    assert.ok(Math.abs(stars.score - expected) < 1e-12);
    assert.ok(film.probability > 0 && film.probability < 1);
    assert.equal(r.body.model, "decider-0.8b", "any name runs the loaded decision model");
  });

  test("malformed bodies are 422 naming the field", async () => {
    const q = DECIDE.questions;
    const cases: [unknown, RegExp][] = [
      [{questions: q}, /^state: /],
      [{state: 5, questions: q}, /^state: /],
      [{state: "x"}, /^questions: /],
      [{state: "x", questions: {}}, /^questions: /],
      [{state: "x", questions: {a: {type: "pick", instructions: "q"}}}, /^questions\.a\.type: /],
      [{state: "x", questions: {a: {type: "choice", instructions: "q", criteria: {only: null}}}}, /2 to 10 options \(found 1\)/],
      [{state: "x", questions: {a: {type: "choice", instructions: "q", criteria: Object.fromEntries(Array.from({length: 11}, (_, i) => [`o${i}`, null]))}}},
        /2 to 10 options \(found 11\)/],
      [{state: "x", questions: {a: {type: "choice", instructions: "q", criteria: {x: 1, y: null}}}}, /^questions\.a\.criteria\.x: /],
      [{state: "x", questions: {a: {type: "score", instructions: "q", criteria: ["one"]}}}, /2 to 10 levels \(found 1\)/],
      [{state: "x", questions: {a: {type: "noul", instructions: "q", criteria: ["x"]}}}, /takes no criteria/],
      [{state: "x", questions: {a: {type: "noul"}}}, /^questions\.a\.instructions: /],
      [{state: "x", questions: q, key: "k"}, /^key: is not a field/],
      ["not json", /^body: /],
    ];
    for (const [body, re] of cases) {
      const r = await post(`${s0.url}/v1/decide`, body);
      assert.equal(r.status, 422, `${JSON.stringify(body)} → ${r.text}`);
      assert.equal(r.body.error.type, "invalid_request_error");
      assert.match(r.body.error.message, re);
    }
  });

  test("wrong pairings are 400 naming the route", async () => {
    const r = await post(`${s2.url}/v1/decide`, {...DECIDE, model: "nx3-reranker-0.6b"});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /POST \/v1\/rerank/);
    const chat = await post(`${s2.url}/v1/chat/completions`, {model: "nx3-reranker-0.6b", messages: [{role: "user", content: "hi"}]});
    assert.equal(chat.status, 400);
    assert.match(chat.body.error.message, /POST \/v1\/rerank/);
    const rerank = await post(`${s2.url}/v1/rerank`, {model: "decider-0.8b", query: "q", documents: ["d"]});
    assert.equal(rerank.status, 400);
    assert.match(rerank.body.error.message, /POST \/v1\/decide/);
  });
});
