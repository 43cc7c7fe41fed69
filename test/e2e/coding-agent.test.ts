// The coding-agent mapping (SVC_FORK=1, SVC_FORK_MAP=coding-agent) end to end on the test model: two threads
// of one session (a main conversation and a subagent), sent the way the clients send them (the identifying
// headers are the recorded ones, see test/fixtures/coding-agent/), on a server with ONE region, so each
// thread's turn evicts the other's state from memory and the next turn can only resume from the state the
// server kept for that thread. Each thread's turn 2 must report X-Svc-From: used and reuse at least its
// turn 1 prompt and reply.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import {reusableEnd, reuseMatch, startServer, type RunningServer} from "../../support/server.ts";

let server: RunningServer;
before(async () => {
  server = await startServer({SVC_FORK: "1", SVC_FORK_MAP: "coding-agent", SVC_PARALLEL: "1"});
});
after(async () => {
  await server?.stop();
});

interface Reply {status: number; headers: Headers; body: any}

async function post(path: string, body: unknown, headers: Record<string, string>): Promise<Reply> {
  const res = await fetch(`${server.url}${path}`, {method: "POST", headers: {"content-type": "application/json", ...headers}, body: JSON.stringify(body)});
  const text = await res.text();
  return {status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined};
}

describe("Codex on /v1/responses: each thread resumes from its own state", () => {
  const session = "01a2021a-5d64-7201-86e0-7f81f698e737";
  const subThread = "01a2021a-5df5-7b63-a717-0c85d7aab502";
  const codex = (thread: string, extra: Record<string, string> = {}) => ({
    authorization: "Bearer test-key", "session-id": session, "thread-id": thread,
    "x-codex-turn-metadata": JSON.stringify({session_id: session, thread_id: thread, request_kind: "turn"}), ...extra,
  });
  type Item = {role: "developer" | "user" | "assistant"; content: string};
  const turn = (input: Item[], headers: Record<string, string>) =>
    post("/v1/responses", {model: "test-model", input, max_output_tokens: 24, temperature: 0, store: false}, headers);
  const outputText = (r: Reply) => (r.body.output as {type: string; content?: {text: string}[]}[])
    .filter((i) => i.type === "message").map((i) => i.content!.map((c) => c.text).join("")).join("");

  test("main turn 1, subagent turn 1, main turn 2, subagent turn 2, and a compaction that keeps nothing", async () => {
    const mainInput: Item[] = [{role: "developer", content: "You are a coding agent. Answer briefly."}, {role: "user", content: "List three prime numbers."}];
    const subInput: Item[] = [{role: "developer", content: "You are a subagent that checks facts."}, {role: "user", content: "Is 7 a prime number?"}];

    const m1 = await turn(mainInput, codex(session));
    assert.equal(m1.status, 200, JSON.stringify(m1.body));
    assert.equal(m1.headers.get("x-svc-keep"), "accepted");
    assert.equal(m1.headers.get("x-svc-from"), null, "the session's first thread starts like any request");

    const s1 = await turn(subInput, codex(subThread, {"x-codex-parent-thread-id": session}));
    assert.equal(s1.status, 200, JSON.stringify(s1.body));
    assert.equal(s1.headers.get("x-svc-keep"), "accepted");
    assert.equal(s1.headers.get("x-svc-from"), "unmatched", "a subagent that does not repeat its parent starts fresh");

    const m2Input: Item[] = [...mainInput, {role: "assistant", content: outputText(m1)}, {role: "user", content: "And one more."}];
    const m2 = await turn(m2Input, codex(session));
    assert.equal(m2.status, 200, JSON.stringify(m2.body));
    assert.equal(m2.headers.get("x-svc-from"), "used");
    const match = await reuseMatch(server);
    const m1Length = reusableEnd(match, m1.body.usage.input_tokens, m1.body.usage.output_tokens, m1.body.incomplete_details?.reason === "max_output_tokens");
    assert.ok(m2.body.usage.input_tokens_details.cached_tokens >= m1Length,
      `main turn 2 reused ${m2.body.usage.input_tokens_details.cached_tokens} tokens; turn 1 was ${m1Length}`);

    const s2Input: Item[] = [...subInput, {role: "assistant", content: outputText(s1)}, {role: "user", content: "Why?"}];
    const s2 = await turn(s2Input, codex(subThread, {"x-codex-parent-thread-id": session}));
    assert.equal(s2.status, 200, JSON.stringify(s2.body));
    assert.equal(s2.headers.get("x-svc-from"), "used");
    const s1Length = reusableEnd(match, s1.body.usage.input_tokens, s1.body.usage.output_tokens, s1.body.incomplete_details?.reason === "max_output_tokens");
    assert.ok(s2.body.usage.input_tokens_details.cached_tokens >= s1Length,
      `subagent turn 2 reused ${s2.body.usage.input_tokens_details.cached_tokens} tokens; turn 1 was ${s1Length}`);

    const compactHeaders = codex(session, {"x-codex-turn-metadata": JSON.stringify({session_id: session, thread_id: session, request_kind: "compaction"})});
    const c = await turn([...m2Input, {role: "assistant", content: outputText(m2)}, {role: "user", content: "Summarise the conversation."}], compactHeaders);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.headers.get("x-svc-keep"), null, "a compaction never keeps");
    assert.equal(c.headers.get("x-svc-from"), "used", "it starts from the main thread's state");

    const listed = await (await fetch(`${server.url}/svc/handles`)).json() as {data: {name: string}[]};
    assert.equal(listed.data.length, 2, "one kept state per thread");
    assert.ok(listed.data.every((h) => /^agent\.[0-9a-f]{8}\.[0-9a-f]{12}\.[0-9a-f]{12}$/.test(h.name)), JSON.stringify(listed.data));
  });
});

describe("Claude Code on /v1/messages: each thread resumes from its own state; the title request keeps nothing", () => {
  const session = "c4816e1f-6cfd-49f9-9d3f-75530580b8cc";
  const beta = "claude-code-20250219,interleaved-thinking-2025-05-14";
  const client = (agent?: string, extra: Record<string, string> = {}) => new Anthropic({baseURL: server.url, apiKey: "test-key", maxRetries: 0,
    defaultHeaders: {"x-claude-code-session-id": session, "anthropic-beta": beta, ...(agent ? {"x-claude-code-agent-id": agent} : {}), ...extra}});
  const tools: Anthropic.Tool[] = [{name: "Read", description: "Read a file", input_schema: {type: "object", properties: {path: {type: "string"}}, required: ["path"]}}];
  const send = (c: Anthropic, system: string, messages: Anthropic.MessageParam[], withTools = true) =>
    c.messages.create({model: "claude-test", max_tokens: 24, temperature: 0, system: [{type: "text", text: "x-anthropic-billing-header: cc_version=2.1.330.440;"},
      {type: "text", text: system}], messages, ...(withTools ? {tools} : {})} as Anthropic.MessageCreateParamsNonStreaming).withResponse();
  const textOf = (m: Anthropic.Message) => m.content.filter((b): b is Anthropic.TextBlock => b.type === "text").map((b) => b.text).join("");
  const turnLength = (m: Anthropic.Message) => m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0) + m.usage.output_tokens;
  /** What a next turn can reuse of this one (a reply cut by max_tokens ends with a token that may never have been evaluated). */
  const reusable = async (m: Anthropic.Message) =>
    reusableEnd(await reuseMatch(server), m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0), m.usage.output_tokens, m.stop_reason === "max_tokens");

  test("main, subagent, title, main turn 2, subagent turn 2", async () => {
    const mainQ: Anthropic.MessageParam[] = [{role: "user", content: "What is 2 + 2?"}];
    const subQ: Anthropic.MessageParam[] = [{role: "user", content: "Name a colour."}];
    const m1 = await send(client(), "You are Claude Code, a coding assistant.", mainQ);
    assert.equal(m1.response.headers.get("x-svc-keep"), "accepted");
    const s1 = await send(client("ad019a8b985a1a26f"), "You are an agent for Claude Code.", subQ);
    assert.equal(s1.response.headers.get("x-svc-keep"), "accepted");

    const title = await send(client(undefined, {"anthropic-beta": "structured-outputs-2025-12-15"}), "You are naming a coding session.",
      [{role: "user", content: "<session>What is 2 + 2?</session>"}], false);
    assert.equal(title.response.headers.get("x-svc-keep"), null, "the title request never keeps");

    const m2 = await send(client(), "You are Claude Code, a coding assistant.",
      [...mainQ, {role: "assistant", content: textOf(m1.data)}, {role: "user", content: "And 3 + 3?"}]);
    assert.equal(m2.response.headers.get("x-svc-from"), "used");
    // The test model's replies run to max_tokens: computed as the Codex turns' are.
    const m1Length = await reusable(m1.data);
    assert.ok(m2.data.usage.cache_read_input_tokens! >= m1Length, `main turn 2 read ${m2.data.usage.cache_read_input_tokens} cached tokens; turn 1 was ${m1Length}`);

    const s2 = await send(client("ad019a8b985a1a26f"), "You are an agent for Claude Code.",
      [...subQ, {role: "assistant", content: textOf(s1.data)}, {role: "user", content: "Another one."}]);
    assert.equal(s2.response.headers.get("x-svc-from"), "used");
    const s1Length = await reusable(s1.data);
    assert.ok(s2.data.usage.cache_read_input_tokens! >= s1Length, `subagent turn 2 read ${s2.data.usage.cache_read_input_tokens} cached tokens; turn 1 was ${s1Length}`);
  });

  test("a session without tools (claude --tools \"\") is kept and resumed like any other", async () => {
    const c = new Anthropic({baseURL: server.url, apiKey: "test-key", maxRetries: 0,
      defaultHeaders: {"x-claude-code-session-id": "5e7b7a52-0d1c-4f39-9d0e-3c1f0b6c2a11", "anthropic-beta": beta}});
    const q: Anthropic.MessageParam[] = [{role: "user", content: "What is 5 + 5?"}];
    const t1 = await send(c, "You are Claude Code, a coding assistant.", q, false);
    assert.equal(t1.response.headers.get("x-svc-keep"), "accepted", "the main thread keeps its state without tools");
    const t2 = await send(c, "You are Claude Code, a coding assistant.",
      [...q, {role: "assistant", content: textOf(t1.data)}, {role: "user", content: "And 6 + 6?"}], false);
    assert.equal(t2.response.headers.get("x-svc-from"), "used");
    // All of turn 1 but, at most, its last token: a reply that ended on its end marker sampled it and never evaluated it.
    assert.ok(t2.data.usage.cache_read_input_tokens! >= turnLength(t1.data) - 1,
      `turn 2 read ${t2.data.usage.cache_read_input_tokens} cached tokens; turn 1 was ${turnLength(t1.data)}`);
  });
});
