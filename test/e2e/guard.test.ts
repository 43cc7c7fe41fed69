// The streaming guard on POST /v1/chat/completions, on the test model behind nx3guard-stream-0.6b (and the
// moderation id beside it; these tests check the events' shapes, order and arithmetic, not which label wins):
// guarded streams through the openai SDK's strict helper with the reply unchanged, the events in order,
// the body form, the header form, refusals at their edges, the unwatched reply past SVC_GUARD_STREAMS,
// skipped text past SVC_GUARD_LAG, and the 400 without side models. The stop at 2,048 tokens (slow: a
// 1,060-token reply watched) is in test/slow/guard-window.test.ts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {post, readSse, startServer, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";
import {testModelPath} from "../../support/test-model.ts";

const GUARD = "nx3guard-stream-0.6b";
const LABELS = ["Safe", "Unsafe", "Controversial"];
const USER_CATEGORIES = ["Violent", "Sexual Content", "Self-Harm", "Political", "PII", "Copyright", "Illegal Acts", "Unethical", "Jailbreak"];
const SUMMARY_KEYS = ["chunks", "complete", "first_flag_token", "flagged_chunks", "peak_unsafe", "skipped_chars", "stopped", "tokens"];

let server: RunningServer;
let client: OpenAI;
let chatUrl: string;

before(async () => {
  // Final wait at its maximum: verdict timing on a shared 2-core box varies tenfold, and these tests check
  // the verdicts themselves (the wait ending a watch early is covered by the unit tests). The lag above every
  // reply's length, so each is read whole (test/slow/guard-window.test.ts shares this server: its 1,060-token reply
  // of test-model words runs to ~7,000 characters, past the default 4,096).
  const model = await testModelPath();
  server = await sharedServer({SVC_NPU_MODELS: `${GUARD}=${model},nx3guard-gen-0.6b=${model}`, SVC_CTX_SIZE: "2560", SVC_PARALLEL: "1",
    SVC_GUARD_STREAMS: "1", SVC_GUARD_FINAL_S: "600", SVC_GUARD_LAG: "65536"});
  client = server.client;
  chatUrl = `${server.url}/v1/chat/completions`;
});
after(async () => {
  await server?.stop();
});

const ask = (content: string) => [{role: "user" as const, content}];
const guardOf = (chunks: any[]) => chunks.filter((c) => c !== "[DONE]" && c.svc_guard).map((c) => c.svc_guard);

function checkUserEvent(ev: any): void {
  assert.equal(ev.event, "user");
  assert.ok(LABELS.includes(ev.risk), ev.risk);
  assert.ok(ev.prob >= 1 / 3 && ev.prob <= 1, String(ev.prob));
  if (ev.risk === "Safe") assert.equal(ev.category, null);
  else assert.ok(USER_CATEGORIES.includes(ev.category), ev.category);
}

function checkChunkEvents(events: any[], chunk: number, flag: number, summary: any): void {
  let last: string | null = "Safe";
  for (const ev of events) {
    assert.deepEqual(Object.keys(ev).sort(), ["category", "event", "flagged", "prob", "risk", "tokens", "unsafe"]);
    assert.ok(LABELS.includes(ev.risk));
    assert.ok(ev.risk !== "Safe" || last !== "Safe", "a Safe verdict is sent only when the label changes");
    assert.equal(ev.flagged, ev.unsafe >= flag);
    assert.ok(ev.unsafe <= summary.peak_unsafe);
    assert.ok(ev.tokens % chunk === 0 || ev.tokens === summary.tokens, `stretch end ${ev.tokens}`);
    last = ev.risk;
  }
}

describe("guarded replies", () => {
  const params = {model: "m", messages: ask("Name three colors."), max_tokens: 24, temperature: 0};

  test("a guarded stream passes the SDK's strict helper, its reply is byte-identical, user first and end just before [DONE]", async () => {
    const plain = await client.chat.completions.create(params);
    assert.equal((plain as unknown as Record<string, unknown>).svc_guard, undefined, "no guard asked: no svc_guard");
    const stream = client.chat.completions.stream({...params, stream_options: {include_usage: true}, guard: {chunk: 4, flag: 0}} as never);
    const chunks: any[] = [];
    stream.on("chunk", (c) => chunks.push(c));
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, plain.choices[0]!.message.content);
    assert.equal(final.choices[0]!.finish_reason, plain.choices[0]!.finish_reason);
    assert.equal(final.usage!.completion_tokens, plain.usage!.completion_tokens);
    const events = guardOf(chunks);
    for (const c of chunks.filter((c) => c.svc_guard)) {
      assert.deepEqual(c.choices, []);
      assert.equal(c.object, "chat.completion.chunk");
      assert.equal(c.id, chunks[0].id);
    }
    checkUserEvent(events[0]);
    const end = events.at(-1);
    assert.equal(end.event, "end");
    assert.deepEqual(Object.keys(end).sort(), ["event", ...SUMMARY_KEYS].sort());
    assert.equal(end.complete, true);
    assert.ok(end.tokens >= plain.usage!.completion_tokens - 2, `the guard read the reply (${end.tokens} tokens)`);
    assert.equal(end.chunks, Math.ceil(end.tokens / 4));
    // flag 0: every stretch is flagged, the first at the end of the first stretch.
    assert.equal(end.flagged_chunks, end.chunks);
    assert.equal(end.first_flag_token, Math.min(4, end.tokens));
    assert.equal(end.skipped_chars, 0);
    assert.equal(end.stopped, false);
    const middle = events.slice(1, -1);
    assert.ok(middle.every((e) => e.event === "chunk"), JSON.stringify(middle));
    checkChunkEvents(middle, 4, 0, end);
  });

  test("raw SSE: the end event is the last frame before [DONE]; the reply's own frames are those of the unguarded stream", async () => {
    const body = {...params, stream: true};
    const unguarded = await readSse(await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)}));
    const guarded = await readSse(await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({...body, guard: true})}));
    assert.equal(guarded.data.at(-1), "[DONE]");
    assert.equal(guarded.data.at(-2).svc_guard.event, "end");
    assert.equal(guardOf(guarded.data)[0].event, "user");
    const own = (data: any[]) => data.filter((c) => c !== "[DONE]" && !c.svc_guard).map((c) => JSON.stringify({...c, id: "", created: 0, timings: undefined}));
    assert.deepEqual(own(guarded.data), own(unguarded.data));
  });

  test("not streamed: the body carries svc_guard.events and the summary, with the reply unchanged", async () => {
    const plain = await post(chatUrl, params);
    const res = await post(chatUrl, {...params, guard: GUARD});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.choices[0].message.content, plain.body.choices[0].message.content);
    const g = res.body.svc_guard;
    assert.deepEqual(Object.keys(g).sort(), ["events", "summary"]);
    checkUserEvent(g.events[0]);
    assert.deepEqual(Object.keys(g.summary).sort(), SUMMARY_KEYS);
    assert.equal(g.summary.complete, true);
    assert.equal(g.summary.chunks, Math.ceil(g.summary.tokens / 16));
    checkChunkEvents(g.events.slice(1), 16, 0.8, g.summary);
    assert.ok(!g.events.some((e: any) => e.event === "end"), "the summary holds the end");
  });

  test("the header X-Svc-Guard: watch turns the guard on", async () => {
    const res = await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json", "X-Svc-Guard": "watch"},
      body: JSON.stringify({...params, stream: true})});
    const {data} = await readSse(res);
    const events = guardOf(data);
    assert.equal(events[0].event, "user");
    assert.equal(events.at(-1).event, "end");
    assert.equal(data.at(-2).svc_guard.event, "end");
  });
});

describe("guard refusals (400 before the reply starts)", () => {
  const base = {model: "m", messages: ask("Say OK."), max_tokens: 4, temperature: 0};

  test("chunk 3 and 129 are refused; 4 and 128 are served (flag 0 and 1 too)", async () => {
    for (const chunk of [3, 129]) {
      const res = await post(chatUrl, {...base, guard: {chunk}});
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error.message, /guard\.chunk: must be an integer from 4 to 128/);
    }
    for (const [chunk, flag] of [[4, 1], [128, 0]]) {
      const res = await post(chatUrl, {...base, guard: {model: GUARD, chunk, flag}});
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.svc_guard.summary.complete, true);
    }
  });

  test("flag outside 0..1, unknown keys, another header value, a streamed request: all 400 with a JSON error", async () => {
    for (const [guard, re] of [[{flag: 1.01}, /guard\.flag: must be a number from 0 to 1/], [{flag: -0.01}, /guard\.flag: must be a number from 0 to 1/],
      [{model: GUARD, block: true}, /guard\.block: is not a guard option/], [7, /guard: must be true, false/]] as const) {
      const res = await post(chatUrl, {...base, guard});
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error.message, re);
    }
    const header = await post(chatUrl, base, {"X-Svc-Guard": "block"});
    assert.equal(header.status, 400);
    assert.match(header.body.error.message, /X-Svc-Guard: the only mode is "watch"/);
    const streamed = await post(chatUrl, {...base, stream: true, guard: {chunk: 3}});
    assert.equal(streamed.status, 400);
    assert.match(streamed.headers.get("content-type")!, /application\/json/);
  });

  test("a model not loaded, or loaded but not a streaming guard, is refused naming it", async () => {
    let res = await post(chatUrl, {...base, guard: "nx3guard-stream-4b"});
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /"nx3guard-stream-4b" is not a loaded streaming-guard model; loaded: nx3guard-stream-0.6b/);
    // The moderation model is loaded, and is not a streaming guard.
    res = await post(chatUrl, {...base, guard: {model: "nx3guard-gen-0.6b"}});
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /guard\.model: nx3guard-gen-0.6b is a moderation model, not a streaming guard; send it to POST \/v1\/moderations/);
  });
});

describe("concurrency", () => {
  test("past SVC_GUARD_STREAMS (1 here) a reply is served unwatched and its stream says so", async () => {
    // The first reply must still be watched when the second one arrives: the test model decodes 96 tokens in a
    // fraction of a second, which a busy machine (test files run two at a time) can take to send the second request,
    // and then the second was watched. 400 tokens keep the first in flight for over a second.
    const request = (maxTokens: number) =>
      JSON.stringify({model: "m", messages: ask("Count to five."), max_tokens: maxTokens, temperature: 0, stream: true, guard: true});
    const first = await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"}, body: request(400)});
    const reader = first.body!.getReader();
    const head = await reader.read(); // the first frame: the first reply is in flight and watched
    assert.ok(head.value && head.value.length > 0);
    const second = await readSse(await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"}, body: request(96)}));
    let rest = Buffer.from(head.value!).toString("utf8");
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString("utf8");
    const firstEvents = rest.split("\n\n").filter((b) => b.startsWith("data: {")).map((b) => JSON.parse(b.slice(6))).filter((c) => c.svc_guard).map((c) => c.svc_guard);
    assert.equal(firstEvents[0].event, "user");
    assert.equal(firstEvents.at(-1).event, "end");
    const secondEvents = guardOf(second.data);
    assert.equal(secondEvents.length, 1);
    assert.equal(secondEvents[0].event, "unwatched");
    assert.match(secondEvents[0].message, /SVC_GUARD_STREAMS/);
    assert.equal(second.data.at(-1), "[DONE]");
    const text = (data: any[]) => data.filter((c) => c !== "[DONE]" && c.choices?.[0]?.delta?.content).map((c) => c.choices[0].delta.content).join("");
    assert.ok(text(second.data).length > 0, "the unwatched reply is served");
  });

});

describe("skipped text past SVC_GUARD_LAG", () => {
  let small: RunningServer;
  before(async () => {
    small = await startServer({SVC_NPU_MODELS: `${GUARD}=${await testModelPath()}`, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_GUARD_LAG: "40",
      SVC_GUARD_FINAL_S: "600"});
  });
  after(async () => {
    await small?.stop();
  });

  test("with a 40-character lag the oldest unreached text is dropped and a skipped event says how much", async () => {
    const res = await fetch(`${small.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({model: "m", messages: ask("Write two sentences about the sea."), max_tokens: 48, temperature: 0, stream: true, guard: {chunk: 4}})});
    const {data} = await readSse(res);
    const content = data.filter((c) => c !== "[DONE]" && c.choices?.[0]?.delta?.content).map((c) => c.choices[0].delta.content).join("");
    assert.ok(content.length > 40, content);
    const events = guardOf(data);
    assert.deepEqual(events.slice(0, 2).map((e) => e.event), ["user", "skipped"]);
    assert.deepEqual(events[1], {event: "skipped", chars: content.length - 40, tokens: 0});
    const end = events.at(-1);
    assert.equal(end.event, "end");
    assert.equal(end.skipped_chars, content.length - 40);
    assert.ok(end.tokens > 0 && end.tokens <= 40);
    assert.equal(end.complete, true);
  });
});

describe("without side models", () => {
  let bare: RunningServer;
  before(async () => {
    bare = await sharedServer({SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});
  });
  after(async () => {
    await bare?.stop();
  });

  test("asking for the guard is a 400 naming SVC_NPU_MODELS; not asking is served as before", async () => {
    const url = `${bare.url}/v1/chat/completions`;
    const base = {model: "m", messages: ask("Say OK."), max_tokens: 4, temperature: 0};
    for (const [body, headers] of [[{...base, guard: true}, {}], [base, {"X-Svc-Guard": "watch"}]] as const) {
      const res = await post(url, body, headers);
      assert.equal(res.status, 400);
      assert.match(res.body.error.message, /SVC_NPU_MODELS/);
    }
    const ok = await post(url, {...base, guard: false});
    assert.equal(ok.status, 200);
    assert.equal(ok.body.svc_guard, undefined);
  });
});
