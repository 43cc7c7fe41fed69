// The engine double itself: its tokenizer, leases, scripted decoding, stop tokens, budgets, cancellation,
// steering and the prefix cache, checked against what the Engine interface promises.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {DEFAULT_SAMPLING} from "../../src/api/fields/common.ts";
import type {DecodeEnd, DecodeItem, DecodeJob, DecodeRun, RegionLease} from "../../src/engine/engine.ts";
import {EngineBusyError, EngineCancelledError} from "../../src/engine/errors.ts";
import {IncrementalDetokenizer} from "../../src/pipeline/detokenizer.ts";
import {BYTE_BASE, IM_END, IM_START, VOCAB_SIZE} from "../doubles/byte-tokenizer.ts";
import {EngineDouble, type Script} from "../doubles/engine-double.ts";

async function drain(run: DecodeRun): Promise<{items: DecodeItem[]; end: DecodeEnd}> {
  const items: DecodeItem[] = [];
  for (;;) {
    const r = await run.next();
    if (r.done) return {items, end: r.value};
    items.push(r.value);
  }
}

const tokensOf = (items: DecodeItem[]) => items.flatMap((i) => (i.kind === "token" ? [i.token] : []));

async function lease(engine: EngineDouble, prompt: number[], signal = new AbortController().signal, timeoutMs = 1000): Promise<RegionLease> {
  return engine.acquire({signal, timeoutMs, prompt, plan: engine.planCuts(prompt.length, {boundaries: []})});
}

function job(engine: EngineDouble, prompt: number[], extra: Partial<DecodeJob> = {}): DecodeJob {
  return {prompt, plan: engine.planCuts(prompt.length, {boundaries: []}), sampling: {...DEFAULT_SAMPLING, seed: 1}, maxTokens: 100,
    stopTokenIds: new Set(engine.info.eogTokenIds), signal: new AbortController().signal, ...extra};
}

describe("the double's tokenizer", () => {
  const engine = new EngineDouble();

  test("text round-trips one token per UTF-8 byte, multibyte characters included", () => {
    const text = "héllo wörld → 😀 ﻿bom";
    const tokens = engine.tokenize(text, {special: false});
    assert.equal(tokens.length, Buffer.byteLength(text, "utf8"));
    assert.ok(tokens.every((t) => t >= BYTE_BASE && t < VOCAB_SIZE));
    assert.equal(engine.detokenize(tokens, {special: false}), text);
    assert.deepEqual([...engine.tokenBytes(tokens[1]!)], [0xc3]);
  });

  test("special tokens are parsed only with special; control tokens show only with special", () => {
    const text = "<|im_start|>user\nhi<|im_end|><think>x</think>";
    const special = engine.tokenize(text, {special: true});
    assert.deepEqual(special.slice(0, 1), [IM_START]);
    assert.ok(special.includes(IM_END));
    const plain = engine.tokenize(text, {special: false});
    assert.ok(plain.every((t) => t >= BYTE_BASE), "as plain text the markers are bytes");
    assert.equal(engine.detokenize(special, {special: true}), text);
    assert.equal(engine.detokenize(special, {special: false}), "user\nhi<think>x</think>");
    assert.equal(engine.detokenize(plain, {special: false}), text);
    assert.equal(new TextDecoder().decode(engine.tokenBytes(IM_END)), "<|im_end|>");
  });

  test("a character split across tokens is held by the incremental detokenizer until it is whole", () => {
    const detok = new IncrementalDetokenizer((t, context) => engine.detokenize(t, {special: false, context}));
    const out = engine.tokenize("a😀b", {special: false}).map((t) => detok.push(t));
    assert.deepEqual(out, ["a", "", "", "", "😀", "b"]);
  });

  test("ids outside the vocabulary are invalid", () => {
    assert.equal(engine.isValidToken(VOCAB_SIZE - 1), true);
    assert.equal(engine.isValidToken(VOCAB_SIZE), false);
    assert.equal(engine.isValidToken(-1), false);
    assert.equal(engine.isValidToken(1.5), false);
    assert.throws(() => engine.tokenBytes(VOCAB_SIZE), RangeError);
  });
});

describe("the double's decoding", () => {
  test("plays the script, ends it with the end-of-turn token (not yielded), fills the stats", async () => {
    const seen: string[] = [];
    const script: Script = (prompt) => {
      seen.push(prompt.text);
      return "Hi there";
    };
    const engine = new EngineDouble({script, regions: 1});
    const prompt = engine.tokenize("<|im_start|>user\nhello<|im_end|>\n", {special: true});
    const l = await lease(engine, prompt);
    const {items, end} = await drain(l.decode(job(engine, prompt)));
    assert.deepEqual(seen, ["<|im_start|>user\nhello<|im_end|>\n"]);
    assert.equal(engine.detokenize(tokensOf(items), {special: false}), "Hi there");
    assert.deepEqual(end, {reason: "stop_token", token: IM_END});
    assert.equal(items[0]!.kind, "progress");
    assert.deepEqual(items.filter((i) => i.kind === "progress").map((i) => (i as {processed: number}).processed), [0, prompt.length]);
    assert.equal(l.stats.promptTokens, prompt.length);
    assert.equal(l.stats.cachedTokens, 0);
    assert.equal(l.stats.predictedTokens, 8);
    assert.ok(l.stats.promptMs > 0);
    assert.equal(l.stats.draftTokens, 0);
    await l.release();
  });

  test("a stop token in the middle of the script ends the reply there", async () => {
    const engine = new EngineDouble({script: () => "ab<|im_end|>cd", regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const l = await lease(engine, prompt);
    const {items, end} = await drain(l.decode(job(engine, prompt)));
    assert.equal(engine.detokenize(tokensOf(items), {special: false}), "ab");
    assert.deepEqual(end, {reason: "stop_token", token: IM_END});
    await l.release();
  });

  test("extra stop ids end it too; without the end-of-turn among the stop ids it is yielded", async () => {
    const engine = new EngineDouble({script: () => "abc", regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const b = engine.tokenize("b", {special: false})[0]!;
    let l = await lease(engine, prompt);
    let r = await drain(l.decode(job(engine, prompt, {stopTokenIds: new Set([b, IM_END])})));
    assert.deepEqual(r.end, {reason: "stop_token", token: b});
    assert.equal(engine.detokenize(tokensOf(r.items), {special: false}), "a");
    await l.release();
    l = await lease(engine, prompt);
    r = await drain(l.decode(job(engine, prompt, {stopTokenIds: new Set<number>(), maxTokens: 10})));
    assert.deepEqual(tokensOf(r.items).at(-1), IM_END);
    await l.release();
  });

  test("the budget ends a reply with length; a repeating script only ends by the budget", async () => {
    const engine = new EngineDouble({script: () => ({steps: [{text: "la "}], end: "repeat"}), regions: 1});
    const prompt = engine.tokenize("sing", {special: false});
    const l = await lease(engine, prompt);
    const r = await drain(l.decode(job(engine, prompt, {maxTokens: 7})));
    assert.deepEqual(r.end, {reason: "length"});
    assert.equal(engine.detokenize(tokensOf(r.items), {special: false}), "la la l");
    assert.equal(l.stats.predictedTokens, 7);
    await l.release();
  });

  test("an abort while the script waits ends the run as cancelled", async () => {
    const engine = new EngineDouble({script: () => [{text: "a"}, {text: "b", wait: new Promise(() => {})}], regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const ac = new AbortController();
    const l = await lease(engine, prompt, ac.signal);
    const run = l.decode(job(engine, prompt, {signal: ac.signal}));
    const kind = async () => ((await run.next()).value as DecodeItem).kind;
    assert.equal(await kind(), "progress");
    assert.equal(await kind(), "progress");
    assert.equal(await kind(), "token");
    const pending = run.next();
    ac.abort();
    assert.deepEqual(await pending, {done: true, value: {reason: "cancelled"}});
    await l.release();
    assert.equal(engine.status().regions[0]!.state, "held");
  });

  test("a script step waits for its promise and delays its tokens", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const engine = new EngineDouble({script: () => [{text: "a"}, {text: "bc", wait: gate, delayMs: 5}], regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const l = await lease(engine, prompt);
    const run = l.decode(job(engine, prompt));
    const got: number[] = [];
    const done = drain(run).then((r) => got.push(...tokensOf(r.items)));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(got.length, 0, "the reply is held at the gate");
    const t0 = performance.now();
    open();
    await done;
    assert.equal(engine.detokenize(got, {special: false}), "abc");
    assert.ok(performance.now() - t0 >= 8);
    await l.release();
  });

  test("a script wait that rejects fails the decode, as an engine error would", async () => {
    const failing = new Promise((_, reject) => setTimeout(() => reject(new Error("boom")), 20));
    const engine = new EngineDouble({script: () => [{text: "a"}, {text: "b", wait: failing}], regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const l = await lease(engine, prompt);
    await assert.rejects(drain(l.decode(job(engine, prompt))), /boom/);
    await l.release();
  });

  test("steering sees every sampled token; a replacement is yielded instead and counts as generated", async () => {
    const engine = new EngineDouble({script: () => "a{b", regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const brace = engine.tokenize("{", {special: false})[0]!;
    const seen: number[] = [];
    const steering = {onToken: (t: number) => {
      seen.push(t);
      return t === brace ? {replaceWith: engine.tokenize("[(", {special: false}), bind: {grammar: {gbnf: "root ::= \"x\"", key: "g1"}}} : null;
    }};
    const l = await lease(engine, prompt);
    const r = await drain(l.decode(job(engine, prompt, {steering})));
    assert.equal(engine.detokenize(tokensOf(r.items), {special: false}), "a[(b");
    assert.equal(seen.length, 3, "the stop token is never shown to steering");
    assert.equal(l.stats.predictedTokens, 4);
    assert.deepEqual(engine.decodes.at(-1)!.bound, ["g1"]);
    await l.release();
  });

  test("logprobs: every token has a fixed fake score with the asked number of alternatives", async () => {
    const engine = new EngineDouble({script: () => "ab", regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const l = await lease(engine, prompt);
    const r = await drain(l.decode(job(engine, prompt, {logprobs: {top: 3}})));
    const scored = r.items.filter((i): i is Extract<DecodeItem, {kind: "token"}> => i.kind === "token");
    assert.equal(scored.length, 2);
    for (const s of scored) {
      assert.equal(s.score!.logprob, Math.log(0.5));
      assert.equal(s.score!.top.length, 3);
      assert.equal(s.score!.top[0]!.token, s.token);
    }
    await l.release();
  });
});

describe("the double's leases and cache", () => {
  test("a second lease waits in order; past the timeout it is EngineBusyError; an abort is EngineCancelledError", async () => {
    const engine = new EngineDouble({regions: 1});
    const prompt = engine.tokenize("x", {special: false});
    const first = await lease(engine, prompt);
    await assert.rejects(lease(engine, prompt, new AbortController().signal, 50), (err: unknown) => err instanceof EngineBusyError && err.retryAfterS === 1);
    const ac = new AbortController();
    const waiting = lease(engine, prompt, ac.signal);
    assert.equal(engine.status().queued, 1);
    ac.abort();
    await assert.rejects(waiting, EngineCancelledError);
    const next = lease(engine, prompt);
    await first.release();
    const second = await next;
    assert.equal(second.regionId, 0);
    await second.release();
  });

  test("the prompt cache follows the real rules: reuse ends at a shared cut, a finished reply is sealed for the next turn", async () => {
    const engine = new EngineDouble({script: () => "ok", regions: 1});
    const text = (t: string) => engine.tokenize(t, {special: false});
    // "hello " | "there": a content boundary at 6, as the prompt builder marks where a message's text starts.
    const prompt = text("hello there");
    const plan = engine.planCuts(prompt.length, {boundaries: [6]});
    const take = (p: number[], boundaries: number[]) => engine.acquire({signal: new AbortController().signal, timeoutMs: 1000, prompt: p,
      plan: engine.planCuts(p.length, {boundaries: boundaries})});
    let l = await take(prompt, [6]);
    assert.deepEqual(l.start, {reused: 0, source: "none", miss: "cold"});
    await drain(l.decode(job(engine, prompt, {plan})));
    await l.release();
    assert.deepEqual(engine.status().regions[0], {id: 0, state: "held", n_ctx: 2048, n_past: prompt.length + 2});
    // The same prompt again: the last prompt token must be evaluated, so reuse stops at the cut before it; the
    // region held the reply too, so the prompt departs from it where the prompt ends.
    l = await take(prompt, [6]);
    assert.deepEqual(l.start, {reused: 6, source: "memory", miss: `diverged@${prompt.length}`});
    await drain(l.decode(job(engine, prompt, {plan})));
    assert.equal(l.stats.cachedTokens, 6);
    await l.release();
    // The next turn sends the reply back: it resumes after the sealed reply.
    const next = [...prompt, ...text("ok"), ...text(" and more")];
    l = await take(next, [6, prompt.length, prompt.length + 2]);
    assert.deepEqual(l.start, {reused: prompt.length + 2, source: "memory", miss: null});
    await l.release();
    const other = text("hello world");
    l = await take(other, [6]);
    assert.deepEqual(l.start, {reused: 6, source: "memory", miss: "diverged@6"});
    await l.release();
    const report = engine.cacheReport();
    assert.equal(report.requests, 4);
    assert.equal(report.hits, 3);
    assert.equal(report.prompt_tokens, 2 * prompt.length + next.length + other.length);
    assert.equal(report.cached_tokens, 6 + prompt.length + 2 + 6);
    assert.equal(report.miss_reasons.cold, 1);
    assert.equal(report.miss_reasons.diverged, 2);
  });

  test("a held conversation is not overwritten while a region is empty: the shared prefix is copied in", async () => {
    const engine = new EngineDouble({script: () => "ok", regions: 2});
    const text = (t: string) => engine.tokenize(t, {special: false});
    const take = (p: number[]) => engine.acquire({signal: new AbortController().signal, timeoutMs: 1000, prompt: p, plan: engine.planCuts(p.length, {boundaries: [6]})});
    const a = text("hello there");
    let l = await take(a);
    await drain(l.decode(job(engine, a, {plan: engine.planCuts(a.length, {boundaries: [6]})})));
    await l.release();
    const b = text("hello world");
    l = await take(b);
    assert.equal(l.regionId, 1);
    assert.deepEqual(l.start, {reused: 6, source: "copy", miss: "diverged@6"});
    await l.release();
    assert.deepEqual(engine.status().regions.map((r) => [r.state, r.n_past]), [["held", a.length + 2], ["held", 6]]);
    assert.equal(engine.cacheReport().pool.relocated, 1);
    assert.equal(engine.cacheReport().evicted, 0);
  });

  test("a prompt without shared cuts reuses nothing, however much it shares", async () => {
    const engine = new EngineDouble({script: () => "ok", regions: 1});
    const prompt = engine.tokenize("hello there", {special: false});
    let l = await lease(engine, prompt);
    await drain(l.decode(job(engine, prompt)));
    await l.release();
    l = await lease(engine, prompt);
    assert.equal(l.start.reused, 0);
    await l.release();
  });

  test("status shows busy, held and free regions and the queue", async () => {
    const engine = new EngineDouble({regions: 2});
    const prompt = engine.tokenize("x", {special: false});
    const l = await lease(engine, prompt);
    assert.deepEqual(engine.status().regions.map((r) => r.state), ["busy", "free"]);
    await l.release();
    assert.deepEqual(engine.status().regions.map((r) => r.state), ["free", "free"], "nothing was evaluated");
    await engine.close();
    assert.equal(engine.status().up, false);
  });
});

describe("the in-process app over the double", () => {
  test("with SVC_FORK=1 a kept session is resumed from its state file (X-Svc-Keep, then X-Svc-From)", async () => {
    const {startInProcessApp} = await import("../doubles/app.ts");
    const server = await startInProcessApp({env: {SVC_FORK: "1", SVC_PARALLEL: "1"}, captureLogs: true, script: () => "A compass shows north."});
    try {
      const ask = [{role: "user", content: "What is a compass for?"}];
      const first = await server.post("/v1/chat/completions", {messages: ask, max_tokens: 40}, {"X-Svc-Keep": "conv"});
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get("x-svc-keep"), "accepted");
      await server.waitForLog(/session handle kept name=conv /);
      // Another conversation takes the only region, so only the kept state can serve the next turn.
      assert.equal((await server.post("/v1/chat/completions", {messages: [{role: "user", content: "Something else"}], max_tokens: 3})).status, 200);
      const next = [...ask, {role: "assistant", content: first.body.choices[0].message.content}, {role: "user", content: "How do I hold it?"}];
      const resumed = await server.post("/v1/chat/completions", {messages: next, max_tokens: 5}, {"X-Svc-From": "conv"});
      assert.equal(resumed.headers.get("x-svc-from"), "used");
      const kept = first.body.usage.prompt_tokens + first.body.usage.completion_tokens;
      assert.ok(resumed.body.usage.prompt_tokens_details.cached_tokens >= kept, `reused ${resumed.body.usage.prompt_tokens_details.cached_tokens} of ${kept}`);
      assert.match(server.logs.at(-1)!, /cache=handle:\d+/);
    } finally {
      await server.close();
    }
  });
});
