// A chat template no family file knows (a Hermes-style template whose call tags are renamed <fn_call>): its call
// syntax is read from its own renders at start, /health says so with the markers, and calls written in those
// markers come back as tool calls, streamed and not, with strict tools enforced in them. In-process over the engine
// double, whose scripted reply plays the model.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

const TEMPLATE = readFileSync(new URL("../fixtures/templates/qwen3-style.jinja", import.meta.url), "utf8")
  .replaceAll("<tool_call>", "<fn_call>").replaceAll("</tool_call>", "</fn_call>");
const CALL = 'Checking.\n<fn_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</fn_call>';

let server: InProcessApp;
let client: OpenAI;
before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: TEMPLATE}, script: () => CALL});
  client = new OpenAI({baseURL: `${await server.listen()}/v1`, apiKey: "unused", maxRetries: 0});
});
after(async () => {
  await server?.close();
});

const tools = [{type: "function" as const, function: {name: "get_weather", strict: true,
  parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}, required: ["city", "days"], additionalProperties: false}}}];
const body = {model: "m", messages: [{role: "user" as const, content: "Weather in Paris?"}], tools, temperature: 0,
  chat_template_kwargs: {enable_thinking: false}};
const fn = (call: object) => (call as {function: {name: string; arguments: string}}).function;

describe("a template no family file knows", () => {
  test("/health: family derived, with the markers read from the template's renders", async () => {
    const health = (await server.get("/health")).body;
    assert.equal(health.chat_template.family.id, "derived");
    assert.deepEqual(health.chat_template.family.derivation, {parallel_calls: true, markers: {shape: "json", opener: "<fn_call>", list: false,
      close: "</fn_call>", nameKey: "name", argsKey: "arguments", pad: "\n"}});
  });

  test("a call in the derived markers is a tool call; the text before it is content", async () => {
    const res = await client.chat.completions.create(body);
    const choice = res.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, "Checking.");
    assert.equal(fn(choice.message.tool_calls![0]!).name, "get_weather");
    assert.deepEqual(JSON.parse(fn(choice.message.tool_calls![0]!).arguments), {city: "Paris", days: 2});
  });

  test("streamed, the same call", async () => {
    const stream = client.chat.completions.stream({...body, stream: true});
    const final = await stream.finalChatCompletion();
    assert.deepEqual(JSON.parse(fn(final.choices[0]!.message.tool_calls![0]!).arguments), {city: "Paris", days: 2});
  });

  test("a strict tool is enforced: the call's grammar is built in the derived markers", async () => {
    await client.chat.completions.create(body);
    const job = server.engine.decodes.at(-1)!.job;
    const steering = JSON.stringify(job.steering ?? null);
    assert.ok(steering.includes("fn_call>"), `the call grammars write the derived markers: ${steering.slice(0, 600)}`);
    assert.ok(server.engine.decodes.at(-1)!.bound.some((key) => key !== null), "a call grammar was bound once the call opened");
    assert.equal((await server.get("/health")).body.structured_output.strict_tools.unenforced_total, 0, "the strict tool was enforced");
  });
});
