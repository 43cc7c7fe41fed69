// A tool call the model breaks (never closed, arguments that are not JSON) on a Hermes-style template, in-process
// over the engine double: a reply that is not streamed gives the text it wrote back as content, with
// finish_reason "stop" and no tool_calls; a streamed one has sent the call already, which stays; the request's
// log line counts the malformed call either way. Never a 500, and the next request is served.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import type {Script} from "../doubles/engine-double.ts";

const QWEN3_STYLE = readFileSync(new URL("../fixtures/templates/qwen3-style.jinja", import.meta.url), "utf8");
const UNCLOSED = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par';
const BAD_JSON = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>';
const GOOD = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

/** The user's message names the reply to play. */
const script: Script = (prompt) => (/unclosed/.test(prompt.text) ? UNCLOSED : /bad json/.test(prompt.text) ? BAD_JSON : GOOD);

let server: InProcessApp;
let client: OpenAI;
before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: QWEN3_STYLE}, captureLogs: true, script});
  client = new OpenAI({baseURL: `${await server.listen()}/v1`, apiKey: "unused", maxRetries: 0});
});
after(async () => {
  await server?.close();
});

const tools = [{type: "function" as const, function: {name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}}}}}];
const ask = (content: string) => ({model: "m", messages: [{role: "user" as const, content}], tools, temperature: 0, chat_template_kwargs: {enable_thinking: false}});
/** A function call's name and arguments (the SDK's type also allows custom tool calls, which svc never sends). */
const fn = (call: object) => (call as {function: {name: string; arguments: string}}).function;
const lastLog = () => server.logs.filter((l) => / request /.test(l) || /"request"/.test(l) || /\brequest\b/.test(l)).at(-1) ?? "";

describe("malformed tool calls", () => {
  test("the family is detected from the template (Hermes JSON with <think>)", async () => {
    const health = await (await fetch(`${await server.listen()}/health`)).json() as {chat_template: {family: {id: string}}};
    assert.equal(health.chat_template.family.id, "qwen3");
  });

  test("not streamed: an unclosed call comes back as the text the model wrote, finish_reason stop", async () => {
    const res = await client.chat.completions.create(ask("unclosed"));
    const choice = res.choices[0]!;
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal(choice.message.content, UNCLOSED);
    assert.equal(choice.finish_reason, "stop");
    assert.match(lastLog(), /malformed_calls=1/);
  });

  test("not streamed: arguments that are not JSON come back as text too", async () => {
    const res = await client.chat.completions.create(ask("bad json"));
    assert.equal(res.choices[0]!.message.tool_calls, undefined);
    assert.ok(res.choices[0]!.message.content!.includes('{"name": "get_weather", "arguments": {"city": Paris'), res.choices[0]!.message.content!);
    assert.equal(res.choices[0]!.finish_reason, "stop");
    assert.match(lastLog(), /malformed_calls=1/);
  });

  test("streamed: the call went out as written and stays; finish_reason stop; the log counts it", async () => {
    const stream = client.chat.completions.stream(ask("unclosed"));
    const done = await stream.finalChatCompletion();
    const choice = done.choices[0]!;
    assert.equal(choice.finish_reason, "stop");
    assert.equal(choice.message.tool_calls?.length, 1);
    const call = fn(choice.message.tool_calls![0]!);
    assert.equal(call.name, "get_weather");
    // Closed best-effort, so it still parses.
    assert.deepEqual(JSON.parse(call.arguments), {city: "Par"});
    assert.equal(choice.message.content, "Let me look.");
    assert.match(lastLog(), /malformed_calls=1/);
  });

  test("a well-formed call after them is served as a call", async () => {
    const res = await client.chat.completions.create(ask("good"));
    assert.equal(res.choices[0]!.finish_reason, "tool_calls");
    assert.deepEqual(JSON.parse(fn(res.choices[0]!.message.tool_calls![0]!).arguments), {city: "Paris"});
    assert.doesNotMatch(lastLog(), /malformed_calls/);
  });
});
