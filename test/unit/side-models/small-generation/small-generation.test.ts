// Small generation without a model: what the request decode refuses (text only, thinking off) and
// accepts, the sampling defaults, the prompt limits at their edges, and the executor gate around each
// decode step.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {ApiError} from "../../../../src/core/errors.ts";
import {toApiError} from "../../../../src/api/error-body.ts";
import {EngineBusyError} from "../../../../src/engine/errors.ts";
import type {DecodeEnd, DecodeItem, DecodeRun} from "../../../../src/engine/engine.ts";
import {SchemaCache} from "../../../../src/grammar/index.ts";
import {newCounters} from "../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";
import {decodeChat} from "../../../../src/api/dialects/chat/decode.ts";
import {smallGenerationRules} from "../../../../src/api/side/small-generation/served.ts";
import {SideExecutor} from "../../../../src/side-models/executor.ts";
import {gatedRun} from "../../../../src/side-models/small-generation/gated-engine.ts";
import {checkSmallPrompt, SMALL_GENERATION_LIMITS} from "../../../../src/side-models/small-generation/limits.ts";
import {apiErrorOf} from "../../../fixtures/api-error.ts";

const ctx = {requestId: "req-1", maxTokensCap: 65_536, strictTools: true, logger: createMemoryLogger(), counters: newCounters()};
const M = "nx3.5-2b";
/** The chat dialect's decode with the small model's rules, as the chat route runs it for this id. */
const decodeSmallGeneration = (model: string, body: unknown, c: typeof ctx) => decodeChat(body, c, smallGenerationRules(model));
const base = {model: M, messages: [{role: "user", content: "Hi"}]};

function refused(extra: Record<string, unknown>): ApiError {
  const err = apiErrorOf(() => decodeSmallGeneration(M, {...base, ...extra}, ctx));
  assert.equal(err.status, 400);
  return err;
}

describe("small generation decode: text only, thinking off", () => {
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ["tools", {tools: [{type: "function", function: {name: "f", parameters: {type: "object"}}}]}, "tools", /small generation is text only, with no tools/],
    ["tool_choice required", {tool_choice: "required"}, "tool_choice", /small generation is text only/],
    ["tool_choice naming a function", {tool_choice: {type: "function", function: {name: "f"}}}, "tool_choice", /small generation is text only/],
    ["a JSON schema", {response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "object"}}}}, "response_format",
      /small generation is text only; a JSON schema or JSON mode is not enforced/],
    ["JSON mode", {response_format: {type: "json_object"}}, "response_format", /small generation is text only/],
    ["logprobs", {logprobs: true}, "logprobs", /small generation is text only; log probabilities are not returned/],
    ["top_logprobs", {top_logprobs: 3}, "top_logprobs", /small generation is text only/],
    ["reasoning_effort high", {reasoning_effort: "high"}, "reasoning_effort", /thinking off; only "none" is accepted/],
    ["reasoning_effort minimal", {reasoning_effort: "minimal"}, "reasoning_effort", /thinking off/],
    ["enable_thinking true", {chat_template_kwargs: {enable_thinking: true}}, "chat_template_kwargs.enable_thinking", /thinking off; send false/],
    ["guard", {guard: true}, "guard", /the streaming guard watches replies of the main model/],
    ["a tool result message", {messages: [{role: "user", content: "x"}, {role: "tool", tool_call_id: "c", content: "1"}]}, "messages[1].role",
      /no tool results/],
    ["an assistant tool call", {messages: [{role: "assistant", content: null, tool_calls: [{id: "c", type: "function", function: {name: "f", arguments: "{}"}}]},
      {role: "user", content: "x"}]}, "messages[0].tool_calls", /no tool calls/],
  ];
  for (const [name, extra, param, message] of cases) {
    test(`${name} is refused naming ${param}`, () => {
      const err = refused(extra);
      assert.equal(err.param, param);
      assert.ok(err.message.startsWith(`${param}: `), err.message);
      assert.match(err.message, message);
    });
  }

  test("what costs nothing is accepted: no tools, tool_choice none, text format, thinking explicitly off", () => {
    for (const extra of [{tools: []}, {tools: null}, {tool_choice: "none"}, {response_format: {type: "text"}}, {logprobs: false},
      {reasoning_effort: "none"}, {chat_template_kwargs: {enable_thinking: false}}, {guard: false}]) {
      const d = decodeSmallGeneration(M, {...base, ...extra}, ctx);
      assert.equal(d.request.prompt.kind === "chat" && d.request.prompt.enableThinking, false, JSON.stringify(extra));
      assert.equal(d.request.responseFormat, null);
      assert.equal(d.request.logprobs, null);
    }
  });

  test("the chat decode's own rules still apply (budget cap, n, bad fields)", () => {
    assert.equal(refused({max_tokens: 65_537}).param, "max_tokens");
    assert.equal(refused({n: 2}).param, "n");
    assert.equal(refused({temperature: 3}).param, "temperature");
    assert.equal(decodeSmallGeneration(M, {...base, max_tokens: 65_536}, ctx).request.maxTokens, 65_536, "the cap itself is accepted (then fitted to the room)");
  });
});

describe("small generation decode: sampling defaults", () => {
  test("none set: temperature 1.0, top_k 20, presence_penalty 2.0; max_tokens left to the pipeline's default", () => {
    const r = decodeSmallGeneration(M, base, ctx).request;
    assert.equal(r.sampling.temperature, 1.0);
    assert.equal(r.sampling.topK, 20);
    assert.equal(r.sampling.presencePenalty, 2.0);
    assert.equal(r.maxTokens, null, "null: the small model's pipeline uses its default of 2,048");
    assert.equal(SMALL_GENERATION_LIMITS.defaultMaxTokens, 2_048);
  });

  test("each one set by the request wins, the others keep their defaults", () => {
    const t = decodeSmallGeneration(M, {...base, temperature: 0}, ctx).request.sampling;
    assert.deepEqual([t.temperature, t.topK, t.presencePenalty], [0, 20, 2]);
    const k = decodeSmallGeneration(M, {...base, top_k: 5}, ctx).request.sampling;
    assert.deepEqual([k.temperature, k.topK, k.presencePenalty], [1, 5, 2]);
    const p = decodeSmallGeneration(M, {...base, presence_penalty: 0}, ctx).request.sampling;
    assert.deepEqual([p.temperature, p.topK, p.presencePenalty], [1, 20, 0]);
    const seeded = decodeSmallGeneration(M, {...base, seed: 7, top_p: 0.5, max_tokens: 9}, ctx).request;
    assert.deepEqual([seeded.sampling.seed, seeded.sampling.topP, seeded.maxTokens], [7, 0.5, 9]);
  });
});

describe("small generation prompt limits", () => {
  const refusal = (n: number, ctxSize: number) => apiErrorOf(() => checkSmallPrompt(M, n, ctxSize));

  test("with a context of the spec's 18,432 positions: 16,384 prompt tokens pass, 16,385 are refused naming the limit", () => {
    assert.doesNotThrow(() => checkSmallPrompt(M, 16_384, 18_432));
    const err = refusal(16_385, 18_432);
    assert.equal(err.status, 400);
    assert.equal(err.param, "messages");
    assert.equal(err.code, "context_length_exceeded");
    assert.match(err.message, /16385 tokens.*prompts of up to 16,384 tokens/);
  });

  test("a model trained on fewer positions (8,192): the last prompt that leaves room passes, the full context is refused naming it", () => {
    assert.doesNotThrow(() => checkSmallPrompt(M, 8_191, 8_192));
    const err = refusal(8_192, 8_192);
    assert.equal(err.status, 400);
    assert.match(err.message, /holds 8192 positions \(its training context, below the 18,432 the spec allows\).*longest prompt here is 8191 tokens/);
  });

  test("the spec's limit is named first when both are broken", () => {
    assert.match(refusal(16_385, 8_192).message, /up to 16,384 tokens/);
  });
});

/** A fake decode run: counts which of its steps ran inside an executor pass. */
function fakeRun(items: DecodeItem[], end: DecodeEnd, inPass: () => boolean, seen: boolean[]): {run: DecodeRun; returned: () => boolean} {
  let returned = false;
  const run = (async function* (): DecodeRun {
    try {
      for (const item of items) {
        seen.push(inPass());
        yield item;
      }
      seen.push(inPass());
      return end;
    } finally {
      returned = true;
    }
  })();
  return {run, returned: () => returned};
}

describe("gatedRun: every decode step is one executor pass", () => {
  test("each step runs inside a pass; the items and the end come through unchanged", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const seen: boolean[] = [];
    const items: DecodeItem[] = [{kind: "progress", processed: 0, elapsedMs: 0}, {kind: "token", token: 5}, {kind: "token", token: 6}];
    const {run} = fakeRun(items, {reason: "stop_token", token: 2}, () => ex.status().running, seen);
    const out: DecodeItem[] = [];
    const gated = gatedRun(run, ex, new AbortController().signal);
    let r = await gated.next();
    while (!r.done) {
      out.push(r.value);
      r = await gated.next();
    }
    assert.deepEqual(out, items);
    assert.deepEqual(r.value, {reason: "stop_token", token: 2});
    assert.deepEqual(seen, [true, true, true, true]);
    assert.equal(ex.status().passes, 4, "three items and the end: four passes");
  });

  test("another side pass waiting is served between two steps (FIFO), not after the whole run", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const order: string[] = [];
    const run = (async function* (): DecodeRun {
      order.push("step 1");
      yield {kind: "token", token: 1};
      order.push("step 2");
      yield {kind: "token", token: 2};
      return {reason: "length"};
    })();
    const gated = gatedRun(run, ex, new AbortController().signal);
    await gated.next();
    const other = ex.run(async () => order.push("other pass"));
    await gated.next();
    await gated.next();
    await other;
    assert.deepEqual(order, ["step 1", "other pass", "step 2"]);
  });

  test("a hang-up while a step waits ends the run as cancelled and closes the inner run", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const ac = new AbortController();
    const {run, returned} = fakeRun([{kind: "token", token: 1}, {kind: "token", token: 2}], {reason: "length"}, () => true, []);
    const gated = gatedRun(run, ex, ac.signal);
    assert.deepEqual((await gated.next()).value, {kind: "token", token: 1});
    let release!: () => void;
    const blocker = ex.run(() => new Promise<void>((r) => (release = r)));
    const waiting = gated.next();
    ac.abort();
    assert.deepEqual(await waiting, {done: true, value: {reason: "cancelled"}});
    assert.equal(returned(), true);
    release();
    await blocker;
  });

  test("a first step refused for the timeout fails the run with 503 and closes the inner run", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 30});
    const seen: boolean[] = [];
    const {run} = fakeRun([{kind: "token", token: 1}, {kind: "token", token: 2}], {reason: "length"}, () => true, seen);
    let release!: () => void;
    const blocker = ex.run(() => new Promise<void>((r) => (release = r)));
    const gated = gatedRun(run, ex, new AbortController().signal);
    const raw = await gated.next().catch((e: unknown) => e);
    assert.ok(raw instanceof EngineBusyError);
    const err = toApiError(raw);
    assert.equal(err.code, "engine_busy");
    assert.equal(err.headers["Retry-After"], "1");
    assert.deepEqual(seen, [], "no step of the inner run was evaluated");
    assert.equal((await run.next()).done, true, "the inner run was closed, so it can never evaluate later");
    assert.equal((await gated.next()).done, true);
    release();
    await blocker;
  });

  test("a later step of a reply under way waits past the timeout instead of failing the half-sent reply", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 30});
    const {run} = fakeRun([{kind: "token", token: 1}, {kind: "token", token: 2}], {reason: "length"}, () => true, []);
    const gated = gatedRun(run, ex, new AbortController().signal);
    assert.deepEqual((await gated.next()).value, {kind: "token", token: 1});
    let release!: () => void;
    const blocker = ex.run(() => new Promise<void>((r) => (release = r)));
    const second = gated.next();
    await new Promise((r) => setTimeout(r, 90));
    release();
    await blocker;
    assert.deepEqual((await second).value, {kind: "token", token: 2}, "the step ran once the device was free, 3x past the timeout");
    assert.equal(ex.status().refused, 0);
  });
});
