// SSE framing on a real Node response (read back raw with fetch), and the chat / completions encoders:
// exact chunk sequences, usage only when asked, [DONE], and the non-streamed bodies.

import assert from "node:assert/strict";
import {createServer, type Server, type ServerResponse} from "node:http";
import type {AddressInfo} from "node:net";
import {after, before, describe, test} from "node:test";
import {SseStream} from "../../../src/api/sse.ts";
import {chatCompletionBody, chatStreamEncoder, chatUsage} from "../../../src/api/dialects/chat/encode.ts";
import {completionBody, completionStreamEncoder} from "../../../src/api/dialects/completions/encode.ts";
import {ApiError} from "../../../src/core/errors.ts";
import type {GenerationEvent, Timings} from "../../../src/core/generation.ts";

// ---------------------------------------------------------------------------------------------------
// SseStream

type Handler = (res: ServerResponse) => void;
let server: Server;
let base = "";
const handlers = new Map<string, Handler>();

before(async () => {
  server = createServer((req, res) => {
    const h = handlers.get(req.url ?? "");
    if (h) h(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("SseStream", () => {
  test("headers, data frames, named events, and nothing after end()", async () => {
    let closedAfterEnd: boolean | undefined;
    handlers.set("/frames", (res) => {
      const sse = new SseStream(res, 60_000, {"X-Request-Id": "abc"});
      assert.equal(sse.closed, false);
      sse.send({a: 1, s: "x\ny"});
      sse.send("[DONE]");
      sse.send({b: 2}, "x");
      sse.end();
      closedAfterEnd = sse.closed;
      sse.send({c: 3});
      sse.send({d: 4}, "late");
      sse.end();
    });
    const r = await fetch(`${base}/frames`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "text/event-stream; charset=utf-8");
    assert.equal(r.headers.get("cache-control"), "no-cache");
    assert.equal(r.headers.get("x-accel-buffering"), "no");
    assert.equal(r.headers.get("x-request-id"), "abc");
    const body = await r.text();
    assert.equal(body, 'data: {"a":1,"s":"x\\ny"}\n\ndata: [DONE]\n\nevent: x\ndata: {"b":2}\n\n');
    assert.equal(closedAfterEnd, true);
  });

  test("a keepalive comment appears after a quiet interval of 50 ms", async () => {
    handlers.set("/keepalive", (res) => {
      const sse = new SseStream(res, 50);
      sse.send({n: 1});
      setTimeout(() => {
        sse.send({n: 2});
        sse.end();
      }, 300);
    });
    const body = await (await fetch(`${base}/keepalive`)).text();
    assert.match(body, /^data: \{"n":1\}\n\n(: keepalive\n\n)+data: \{"n":2\}\n\n$/);
  });

  test("a stream whose client went away reports closed and ignores sends", async () => {
    let resolveSeen!: (v: {closed: boolean; threw: boolean}) => void;
    const seen = new Promise<{closed: boolean; threw: boolean}>((r) => (resolveSeen = r));
    handlers.set("/hangup", (res) => {
      const sse = new SseStream(res, 60_000);
      sse.send({first: true});
      res.on("close", () => {
        let threw = false;
        try {
          sse.send({after: true});
          sse.end();
        } catch {
          threw = true;
        }
        resolveSeen({closed: sse.closed, threw});
      });
    });
    const ac = new AbortController();
    const r = await fetch(`${base}/hangup`, {signal: ac.signal});
    const reader = r.body!.getReader();
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'data: {"first":true}\n\n');
    ac.abort();
    await reader.cancel().catch(() => {});
    assert.deepEqual(await seen, {closed: true, threw: false});
  });
});

// ---------------------------------------------------------------------------------------------------
// Encoders

const timings: Timings = {
  prompt_n: 10, prompt_ms: 20, prompt_per_second: 500,
  predicted_n: 2, predicted_ms: 8, predicted_per_second: 250,
  cache_n: 3, draft_n: 0, draft_n_accepted: 0,
};
const progress = {total: 10, cache: 3, processed: 10, time_ms: 20};
const done: GenerationEvent = {
  type: "done", finishReason: "stop", stoppedBy: "###",
  usage: {promptTokens: 10, completionTokens: 2, cachedTokens: 3, reasoningTokens: 1},
  timings,
  logprobs: null,
};
const events: GenerationEvent[] = [{type: "progress", progress}, {type: "text", text: "Hi"}, {type: "text", text: "!"}, done];
const who = {id: "chatcmpl-abc", created: 1_700_000_000, model: "svc-test"};
const usage = {
  prompt_tokens: 10, completion_tokens: 2, total_tokens: 12,
  prompt_tokens_details: {cached_tokens: 3}, completion_tokens_details: {reasoning_tokens: 1},
};

function run(enc: {frames(e: GenerationEvent): {data: unknown; event?: string}[]}, evs: GenerationEvent[]) {
  const frames = evs.flatMap((e) => enc.frames(e));
  for (const f of frames) assert.equal(f.event, undefined);
  return frames.map((f) => f.data as Record<string, unknown>);
}

describe("chatStreamEncoder", () => {
  const head = {id: who.id, object: "chat.completion.chunk", created: who.created, model: who.model};

  test("without include_usage: progress, role, text, text, finish; no usage key anywhere", () => {
    const enc = chatStreamEncoder(who, false);
    const chunks = run(enc, events);
    assert.deepEqual(chunks, [
      {...head, choices: [], prompt_progress: progress},
      {...head, choices: [{index: 0, delta: {role: "assistant", content: "", refusal: null}, logprobs: null, finish_reason: null}]},
      {...head, choices: [{index: 0, delta: {content: "Hi"}, logprobs: null, finish_reason: null}]},
      {...head, choices: [{index: 0, delta: {content: "!"}, logprobs: null, finish_reason: null}]},
      {...head, choices: [{index: 0, delta: {}, logprobs: null, finish_reason: "stop"}], timings},
    ]);
    for (const c of chunks) assert.equal("usage" in c, false);
    assert.equal(enc.terminator, "[DONE]");
  });

  test("with include_usage: usage null on every chunk but a final usage chunk with choices []", () => {
    const chunks = run(chatStreamEncoder(who, true), events);
    assert.deepEqual(chunks, [
      {...head, choices: [], usage: null, prompt_progress: progress},
      {...head, choices: [{index: 0, delta: {role: "assistant", content: "", refusal: null}, logprobs: null, finish_reason: null}], usage: null},
      {...head, choices: [{index: 0, delta: {content: "Hi"}, logprobs: null, finish_reason: null}], usage: null},
      {...head, choices: [{index: 0, delta: {content: "!"}, logprobs: null, finish_reason: null}], usage: null},
      {...head, choices: [{index: 0, delta: {}, logprobs: null, finish_reason: "stop"}], usage: null, timings},
      {...head, choices: [], usage, timings},
    ]);
  });

  test("the role chunk is sent once, before the first text, even when there is no text", () => {
    const chunks = run(chatStreamEncoder(who, false), [{...done, finishReason: "length"} as GenerationEvent]);
    assert.equal(chunks.length, 2);
    assert.deepEqual((chunks[0]!.choices as unknown[])[0], {index: 0, delta: {role: "assistant", content: "", refusal: null}, logprobs: null, finish_reason: null});
    assert.deepEqual((chunks[1]!.choices as unknown[])[0], {index: 0, delta: {}, logprobs: null, finish_reason: "length"});
  });

  test("all chunks share id, created and model", () => {
    const chunks = run(chatStreamEncoder(who, true), events);
    assert.equal(new Set(chunks.map((c) => `${c.id}|${c.created}|${c.model}`)).size, 1);
  });

  test("the error frame is the OpenAI error body", () => {
    const enc = chatStreamEncoder(who, false);
    assert.deepEqual(enc.errorFrame(new ApiError("server_error", "boom")), {error: {message: "boom", type: "server_error", param: null, code: null}});
  });

  test("chatUsage", () => {
    assert.deepEqual(chatUsage({promptTokens: 5, completionTokens: 7, cachedTokens: 0, reasoningTokens: 2}), {
      prompt_tokens: 5, completion_tokens: 7, total_tokens: 12,
      prompt_tokens_details: {cached_tokens: 0}, completion_tokens_details: {reasoning_tokens: 2},
    });
  });
});

describe("chatCompletionBody", () => {
  test("the text joined, finish reason, usage and timings", () => {
    assert.deepEqual(chatCompletionBody(who, events), {
      id: who.id, object: "chat.completion", created: who.created, model: who.model,
      choices: [{index: 0, message: {role: "assistant", content: "Hi!", refusal: null}, logprobs: null, finish_reason: "stop"}],
      usage, timings,
    });
  });
  test("no text: empty content", () => {
    assert.equal(chatCompletionBody(who, [done]).choices[0]!.message.content, "");
  });
  test("no done event is an error", () => {
    assert.throws(() => chatCompletionBody(who, [{type: "text", text: "x"}]), {message: "generation ended without a done event"});
  });
});

describe("completionStreamEncoder", () => {
  const cwho = {id: "cmpl-1", created: 1_700_000_001, model: "svc-test"};
  const head = {id: cwho.id, object: "text_completion", created: cwho.created, model: cwho.model};

  test("without include_usage", () => {
    const enc = completionStreamEncoder(cwho, false);
    const chunks = run(enc, events);
    assert.deepEqual(chunks, [
      {...head, choices: [], prompt_progress: progress},
      {...head, choices: [{index: 0, text: "Hi", logprobs: null, finish_reason: null}]},
      {...head, choices: [{index: 0, text: "!", logprobs: null, finish_reason: null}]},
      {...head, choices: [{index: 0, text: "", logprobs: null, finish_reason: "stop"}], timings},
    ]);
    for (const c of chunks) assert.equal("usage" in c, false);
    assert.equal(enc.terminator, "[DONE]");
  });

  test("with include_usage", () => {
    assert.deepEqual(run(completionStreamEncoder(cwho, true), events), [
      {...head, choices: [], usage: null, prompt_progress: progress},
      {...head, choices: [{index: 0, text: "Hi", logprobs: null, finish_reason: null}], usage: null},
      {...head, choices: [{index: 0, text: "!", logprobs: null, finish_reason: null}], usage: null},
      {...head, choices: [{index: 0, text: "", logprobs: null, finish_reason: "stop"}], usage: null, timings},
      {...head, choices: [], usage, timings},
    ]);
  });

  test("error frame", () => {
    const err = new ApiError("engine_busy", "busy", {headers: {"Retry-After": "3"}});
    assert.deepEqual(completionStreamEncoder(cwho, false).errorFrame(err), {error: {message: "busy", type: "server_error", param: null, code: "engine_busy"}});
  });

  test("completionBody", () => {
    assert.deepEqual(completionBody(cwho, events), {
      id: cwho.id, object: "text_completion", created: cwho.created, model: cwho.model,
      choices: [{index: 0, text: "Hi!", logprobs: null, finish_reason: "stop"}],
      usage, timings,
    });
    assert.throws(() => completionBody(cwho, []), {message: "generation ended without a done event"});
  });
});

describe("encoder frames through SseStream", () => {
  test("a chat stream as a client reads it", async () => {
    handlers.set("/chat", (res) => {
      const sse = new SseStream(res, 60_000);
      const enc = chatStreamEncoder(who, false);
      for (const ev of [{type: "text", text: "Hi"} as GenerationEvent, done]) for (const f of enc.frames(ev)) sse.send(f.data, f.event);
      sse.send(enc.terminator!);
      sse.end();
    });
    const body = await (await fetch(`${base}/chat`)).text();
    const frames = body.split("\n\n");
    assert.equal(frames.pop(), "");
    assert.equal(frames.length, 4);
    for (const f of frames) assert.match(f, /^data: /);
    assert.equal(frames[3], "data: [DONE]");
    assert.deepEqual(frames.slice(0, 3).map((f) => JSON.parse(f.slice(6)).choices[0].delta), [{role: "assistant", content: "", refusal: null}, {content: "Hi"}, {}]);
  });
});
