// One region, a short queue timeout: the queue serves in order, reports itself in /health, answers 503
// engine_busy with Retry-After when a request cannot start in time; a client hang-up frees the region
// (streamed) or is logged as 499 (not streamed); a quiet stream gets keepalive comments. In-process over the
// engine double, on a real listener (hang-ups need a socket); a test holds a reply with a gate where the
// real model's reply simply took long.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {post} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import type {Script} from "../doubles/engine-double.ts";

let server: InProcessApp;
let url: string;

/** A story that goes on until the budget ends it, a token every few milliseconds. */
const story: Script = () => ({steps: [{text: "Once upon a time a dragon met a knight. ", delayMs: 3}], end: "repeat"});

before(async () => {
  // SVC_CTX_SIZE 8192: the keepalive case's prompt is the e2e one, and every byte is a token here.
  server = await startInProcessApp({env: {SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1.5", SVC_KEEPALIVE_S: "0.1", SVC_CTX_SIZE: "8192"}, script: story,
    captureLogs: true});
  url = await server.listen();
});
after(async () => {
  await server?.close();
});

const longReply = {messages: [{role: "user", content: "Write a very long story about a dragon and a knight."}], max_tokens: 400, temperature: 0};

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}\n${server.logs.slice(-5).join("\n")}`);
}

const busy = async () => ((await server.get("/slots")).body[0].is_processing ? true : undefined);
const idle = async () => ((await server.get("/slots")).body[0].is_processing ? undefined : true);

/** A reply that stops at the gate after its first word (4 tokens, within every budget here), until the test opens it. */
function gated(): {script: Script; open: () => void} {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  return {script: () => [{text: "Once"}, {text: " upon a time there was a dragon.", wait: gate}], open};
}

describe("queue, hang-up, keepalive", () => {
  test("a streaming client that hangs up frees its region", async () => {
    server.engine.script = gated().script; // never opened: only the hang-up ends it
    const ac = new AbortController();
    const res = await fetch(`${url}/v1/chat/completions`, {method: "POST", signal: ac.signal,
      headers: {"content-type": "application/json"}, body: JSON.stringify({...longReply, stream: true})});
    const reader = res.body!.getReader();
    await reader.read(); // the stream has started
    assert.equal(await busy(), true);
    ac.abort();
    await waitFor("the region to be freed", idle);
    await server.waitForLog(/request .*route=chat status=499 stream=true finish=cancelled/);
  });

  test("a non-streaming client that hangs up is cancelled and logged as 499", async () => {
    server.engine.script = gated().script;
    const ac = new AbortController();
    const pending = fetch(`${url}/v1/chat/completions`, {method: "POST", signal: ac.signal,
      headers: {"content-type": "application/json"}, body: JSON.stringify(longReply)}).catch((e: Error) => e);
    await waitFor("the request to start", busy);
    ac.abort();
    assert.ok((await pending) instanceof Error);
    await server.waitForLog(/request .*route=chat status=499 stream=false finish=cancelled/);
    await waitFor("the region to be freed", idle);
  });

  test("requests wait in order; one that cannot start in time gets 503 engine_busy with Retry-After", async () => {
    const held = gated();
    server.engine.script = held.script;
    const first = post(`${url}/v1/chat/completions`, {...longReply, max_tokens: 150});
    await waitFor("the first request to run", busy);
    const queued = post(`${url}/v1/chat/completions`, {...longReply, max_tokens: 2});
    const health = await waitFor("the queue to show a waiter", async () => {
      const h = (await server.get("/health")).body;
      return h.queued === 1 && h.longest_wait_s > 0 ? h : undefined;
    });
    assert.equal(health.queued, 1);
    const second = await queued;
    assert.equal(second.status, 503, second.text);
    assert.equal(second.body.error.code, "engine_busy");
    assert.match(second.body.error.message, /SVC_QUEUE_TIMEOUT/);
    assert.equal(second.headers.get("retry-after"), "2");
    held.open();
    assert.equal((await first).status, 200);
    const after = (await server.get("/health")).body;
    assert.equal(after.queued, 0);
    assert.equal(after.longest_wait_s, 0);
  });

  test("a queued request starts when the region frees, in arrival order", async () => {
    // a (the 12-token reply) is held until b and c both wait for its region.
    const held = gated();
    server.engine.script = (prompt, job) => (job.maxTokens === 12 ? held.script(prompt, job) : story(prompt, job));
    const order: string[] = [];
    const a = post(`${url}/v1/chat/completions`, {...longReply, max_tokens: 12}).then((r) => (order.push("a"), r));
    await waitFor("a to run", busy);
    const b = post(`${url}/v1/chat/completions`, {...longReply, max_tokens: 3}).then((r) => (order.push("b"), r));
    await new Promise((r) => setTimeout(r, 30));
    const c = post(`${url}/v1/chat/completions`, {...longReply, max_tokens: 3}).then((r) => (order.push("c"), r));
    await waitFor("b and c to wait", async () => ((await server.get("/health")).body.queued === 2 ? true : undefined));
    held.open();
    const results = await Promise.all([a, b, c]);
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200]);
    assert.deepEqual(order, ["a", "b", "c"]);
  });

  test("a quiet stream gets keepalive comments", async () => {
    server.engine.script = story;
    // The double reads this prompt (~6,800 tokens here) at 0.05 ms a token: well over the 0.1 s keepalive
    // interval with no frames meanwhile, as the real model reading its ~1,500 tokens.
    server.engine.prefillMsPerToken = 0.05;
    try {
      const prompt = "The quick brown fox jumps over the lazy dog. ".repeat(150);
      const res = await fetch(`${url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({messages: [{role: "user", content: prompt}], max_tokens: 2, stream: true})});
      const raw = await res.text();
      const beforeFirstData = raw.slice(0, raw.indexOf("data: "));
      assert.match(beforeFirstData, /^(: keepalive\n\n)+$/, `keepalive comments before the first frame, got ${JSON.stringify(beforeFirstData.slice(0, 80))}`);
      assert.match(raw, /data: \[DONE\]\n\n$/);
    } finally {
      server.engine.prefillMsPerToken = 0;
    }
  });
});
