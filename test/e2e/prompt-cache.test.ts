// The prompt cache on the test model: a follow-up turn resumes after the previous reply, a shared system
// message is a resume point, /cache and /metrics account for it, held conversations are moved rather than
// lost, and a hang-up storm leaves no busy region.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {get, reusableEnd, reuseMatch, sealCount, sealedReplies, startServer, type RunningServer} from "../../support/server.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Usage = {prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: {cached_tokens?: number}};
type WithTimings = {timings: Record<string, number>; usage: Usage};

const SYSTEM = "You are a patient guide who explains everyday things in plain words, with one short example each time.";

describe("prompt cache", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({SVC_PARALLEL: "2"});
  });
  after(async () => {
    await server?.stop();
  });

  const chat = async (messages: Msg[], max = 24) => {
    const res = await server.client.chat.completions.create({model: "m", messages, max_tokens: max, temperature: 0});
    return res as typeof res & WithTimings;
  };
  const cacheReport = async () => (await get(`${server.url}/cache`)).body as Record<string, any>;

  test("turn 2 (once turn 1's reply is sealed) resumes after its prompt and reply; /cache and the log line account for it", async () => {
    const before = await cacheReport();
    const turn1: Msg[] = [{role: "system", content: SYSTEM}, {role: "user", content: "What is a compass for?"}];
    const seals = await sealCount(server);
    const r1 = await chat(turn1);
    await sealedReplies(server, seals + 1);
    const reply = r1.choices[0]!.message.content!;
    const turn2: Msg[] = [...turn1, {role: "assistant", content: reply}, {role: "user", content: "And how do I hold it?"}];
    const r2 = await chat(turn2);
    const cached = r2.usage.prompt_tokens_details!.cached_tokens!;
    assert.ok(cached >= reusableEnd(await reuseMatch(server), r1.usage.prompt_tokens, r1.usage.completion_tokens, r1.choices[0]!.finish_reason === "length"),
      `turn 2 reused ${cached} tokens; turn 1 had ${r1.usage.prompt_tokens} prompt + ${r1.usage.completion_tokens} reply tokens`);
    assert.equal(r2.timings.cache_n, cached, "timings.cache_n equals usage's cached_tokens");
    assert.equal(r2.timings.prompt_n, r2.usage.prompt_tokens - cached, "only the rest was evaluated");
    const now = await cacheReport();
    assert.equal(now.requests - before.requests, 2);
    assert.ok(now.hits - before.hits >= 1);
    assert.ok(now.cached_tokens - before.cached_tokens >= cached);
    assert.ok(now.prompt_tokens - before.prompt_tokens === r1.usage.prompt_tokens + r2.usage.prompt_tokens);
    assert.ok(now.hit_rate > 0 && now.hit_rate <= 1 && now.token_hit_rate > 0 && now.token_hit_rate <= 1);
    assert.ok(now.pool.held_regions >= 1, "the conversation is held between turns");
    await server.waitForLog(new RegExp(`cache=memory:${cached}\\b`));
  });

  test("a new conversation with the same system message resumes at the end of it", async () => {
    const tokenize = async (content: string) =>
      ((await (await fetch(`${server.url}/tokenize`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({content, parse_special: true})})).json()) as {tokens: number[]}).tokens.length;
    const systemPart = await tokenize(`<|im_start|>system\n${SYSTEM}`);
    await chat([{role: "system", content: SYSTEM}, {role: "user", content: "Why is the sky blue?"}], 4);
    const r = await chat([{role: "system", content: SYSTEM}, {role: "user", content: "How do bees make honey?"}], 4);
    assert.ok(r.usage.prompt_tokens_details!.cached_tokens! >= systemPart,
      `reused ${r.usage.prompt_tokens_details!.cached_tokens} tokens; the system message ends at ${systemPart}`);
  });

  test("the report has every field of the spec's table", async () => {
    const c = await cacheReport();
    for (const k of ["hit_rate", "token_hit_rate"]) assert.equal(typeof c[k], "number", k);
    for (const k of ["positions", "used", "usage_ratio", "busy_regions", "held_regions", "room_clamped", "moved", "dropped", "waiting_for_room",
      "waiting_s", "relocated", "cold_resorts"]) assert.equal(typeof c.pool[k], "number", `pool.${k}`);
    assert.equal(c.pool.positions, 2 * 2048);
    assert.ok(c.pool.used <= c.pool.positions);
    assert.equal(c.pool.busy_regions, 0);
    assert.equal(c.disk.enabled, false);
  });

  test("held conversations are evicted least recently used first, and a lost one is reported as evicted", async () => {
    // Two regions. A and B are held; A's follow-up resumes from A's region; then C takes the least recently
    // used region (B's), so B's follow-up starts over and says why.
    const followUp = (m: Msg[], reply: string, q: string): Msg[] => [...m, {role: "assistant", content: reply}, {role: "user", content: q}];
    const seals = await sealCount(server);
    const a: Msg[] = [{role: "user", content: "List four fruits that are red."}];
    const ra = await chat(a, 12);
    const b: Msg[] = [{role: "user", content: "Describe a quiet library in one sentence."}];
    const rb = await chat(b, 12);
    await sealedReplies(server, seals + 2);
    const fa = await chat(followUp(a, ra.choices[0]!.message.content!, "Which is sweetest?"), 4);
    assert.ok(fa.usage.prompt_tokens_details!.cached_tokens! >= reusableEnd(await reuseMatch(server), ra.usage.prompt_tokens, ra.usage.completion_tokens,
      ra.choices[0]!.finish_reason === "length"), "A resumed after its reply");
    const evictedBefore = (await cacheReport()).evicted;
    await chat([{role: "user", content: "Name a large animal that swims in the sea."}], 12);
    assert.equal((await cacheReport()).evicted, evictedBefore + 1, "C overwrote one held conversation");
    const fb = await chat(followUp(b, rb.choices[0]!.message.content!, "Is it busy?"), 4);
    assert.ok(fb.usage.prompt_tokens_details!.cached_tokens! < rb.usage.prompt_tokens, "B's state was the one evicted");
    await server.waitForLog(/cache=\S*evicted/);
  });

  test("GET /metrics exports the cache and request numbers in Prometheus text", async () => {
    const res = await fetch(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
    const text = await res.text();
    const value = (name: string) => Number(new RegExp(`^${name.replace(/[:]/g, "\\:")}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)?.[1]);
    const c = await cacheReport();
    assert.equal(value("svc:cache_hits_total"), c.hits);
    assert.equal(value("svc:prompt_tokens_cached_total"), c.cached_tokens);
    assert.equal(value("svc:kv_pool_positions"), c.pool.positions);
    assert.equal(value("svc:engine_up"), 1);
    assert.match(text, /^svc:requests_total\{route="chat",status="200"\} \d+$/m);
    assert.match(text, /^svc:cache_misses_by_reason_total\{reason="diverged"\} \d+$/m);
  });

  test("a reply the client stopped mid-stream is reused by the next turn that sends it back (matched by rows)", async () => {
    assert.equal(await reuseMatch(server), "rows");
    // A stopped reply's text is not a reply the server remembers by text, so it is tokenized afresh: reuse runs up to
    // the first token the model wrote otherwise than its tokenizer would cut the text. The test model often does (it
    // writes " dispersal"+"cod"+"sci"); this question's reply reads back token for token for its first 21 tokens.
    const turn1: Msg[] = [{role: "system", content: SYSTEM}, {role: "user", content: "Describe a quiet garden in the morning."}];
    const promptTokens = (await chat(turn1, 1)).usage.prompt_tokens;
    const ac = new AbortController();
    const stream = await server.client.chat.completions.create({model: "m", messages: turn1, max_tokens: 96, temperature: 0, stream: true},
      {signal: ac.signal});
    let partial = "";
    let chunks = 0;
    try {
      for await (const c of stream) {
        partial += c.choices[0]?.delta?.content ?? "";
        if (++chunks === 24) ac.abort();
      }
    } catch (err) {
      assert.ok(ac.signal.aborted, `only our abort ends the stream: ${String(err)}`);
    }
    for (let t = 0; t < 100 && (await cacheReport()).pool.busy_regions !== 0; t++) await new Promise((r) => setTimeout(r, 50));
    const r2 = await chat([...turn1, {role: "assistant", content: partial}, {role: "user", content: "What is the loudest thing there?"}], 4);
    const cached = r2.usage.prompt_tokens_details!.cached_tokens!;
    assert.ok(cached > promptTokens + 10, `reused ${cached} tokens; the prompt had ${promptTokens} and the stopped reply ${partial.length} characters`);
  });

  test("200 client hang-ups mid-stream leave no busy region, and the next request is served", async () => {
    const hangUp = async (i: number) => {
      const ac = new AbortController();
      const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", signal: ac.signal, headers: {"content-type": "application/json"},
        body: JSON.stringify({messages: [{role: "user", content: `Count slowly from ${i}.`}], max_tokens: 200, temperature: 0, stream: true})});
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await reader.cancel().catch(() => undefined);
    };
    for (let i = 0; i < 200; i += 4) await Promise.all([0, 1, 2, 3].map((k) => hangUp(i + k).catch(() => undefined)));
    const deadline = Date.now() + 20_000;
    let busy = -1;
    while (Date.now() < deadline) {
      busy = (await cacheReport()).pool.busy_regions;
      if (busy === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(busy, 0, "every region is free or held again");
    const r = await chat([{role: "user", content: "Say OK."}], 3);
    assert.ok(r.choices[0]!.message.content !== undefined);
  });
});

describe("prompt cache on a fresh server (default regions)", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({});
  });
  after(async () => {
    await server?.stop();
  });

  test("a classifier loop reuses the shared system message from its second item on (the next item waits for a short seal, never starts cold)", async () => {
    const system = "Classify the review as positive, negative or neutral. Answer with one word after the prefix.";
    const reviews = ["I loved this film.", "The food was cold and late.", "It was fine, nothing special.", "Best concert of my life."];
    const cachedCounts: number[] = [];
    for (const review of reviews) {
      const res = await server.client.chat.completions.create({model: "m", max_tokens: 1, temperature: 0,
        messages: [{role: "system", content: system}, {role: "user", content: `Review: ${review}`}]});
      cachedCounts.push(res.usage!.prompt_tokens_details!.cached_tokens!);
    }
    assert.equal(cachedCounts[0], 0, "the first item is cold");
    for (const [i, n] of cachedCounts.entries()) if (i > 0) assert.ok(n >= 20, `item ${i} reused the system message: cached ${cachedCounts.join(", ")}`);
  });
});

