// Tool calling on the test model (support/test-model.ts) through the openai client. Its template, SmolLM2's, has
// no tool support, so the server describes the tools in a system message and reads the generic JSON call form.
// tool_choice required/named binds the call from the first token, strict tools bind the arguments to
// their schema (checked with ajv), parallel_tool_calls: false allows one call, streams deliver the same
// calls through the SDK's strict stream helper, and tool_choice none returns no call.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import ajvModule from "ajv/dist/2020.js";
import type OpenAI from "openai";
import {get, type RunningServer, trainedModel} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";

let server: RunningServer;
const ajv = new ajvModule.default({strict: false, allErrors: true});

before(async () => {
  server = await sharedServer({SVC_PARALLEL: "2"});
});
after(async () => {
  await server?.stop();
});

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    strict: true,
    parameters: {
      type: "object",
      properties: {city: {type: "string", minLength: 1, maxLength: 40}, unit: {type: "string", enum: ["celsius", "fahrenheit"]}, days: {type: "integer"}},
      required: ["city", "unit"],
      additionalProperties: false,
    },
  },
};
const time = {
  type: "function" as const,
  function: {name: "get_time", description: "Current time in a time zone", parameters: {type: "object", properties: {zone: {type: "string"}}}},
};

function body(extra: Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming> = {}) {
  return {
    model: "m",
    messages: [{role: "user" as const, content: "What is the weather in Paris today?"}],
    tools: [weather, time],
    max_tokens: 200,
    temperature: 0,
    ...extra,
  };
}

function calls(res: OpenAI.Chat.Completions.ChatCompletion) {
  return (res.choices[0]!.message.tool_calls ?? []).map((c) => {
    assert.equal(c.type, "function");
    const fn = (c as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function;
    assert.match(c.id, /^call_/);
    return {name: fn.name, args: JSON.parse(fn.arguments) as Record<string, unknown>};
  });
}

/** A reply under tool_choice "required": only calls (at least one), of the offered tools, strict arguments valid. */
function expectRequiredCalls(res: OpenAI.Chat.Completions.ChatCompletion): void {
    const choice = res.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls", JSON.stringify(choice.message));
    const got = calls(res);
    assert.ok(got.length >= 1);
    assert.equal(choice.message.content, null, "no call syntax in content");
    for (const c of got) {
      assert.ok(["get_weather", "get_time"].includes(c.name));
      if (c.name === "get_weather") assert.ok(ajv.validate(weather.function.parameters, c.args), JSON.stringify(ajv.errors));
    }
}

describe("tool calls on the test model (generic JSON form)", () => {
  test("tool_choice required: a call comes back as tool_calls, strict arguments match the schema", async () => {
    // One call: the test model never closes a list of calls by itself (a trained model closes it after its call).
    const res = await server.client.chat.completions.create(body({tool_choice: "required", parallel_tool_calls: false}));
    expectRequiredCalls(res);
  });

  test("tool_choice required with parallel calls allowed: the model closes its list of calls", async () => {
    // Trained model: the test model never closes a list of calls by itself; ending the list is the model's choice.
    const trained = await sharedServer(trainedModel());
    const res = await trained.client.chat.completions.create(body({tool_choice: "required"}));
    expectRequiredCalls(res);
    await trained.stop();
  });

  test("a named tool_choice calls exactly that tool; with parallel_tool_calls false, once", async () => {
    for (const seed of [1, 2, 3]) {
      const res = await server.client.chat.completions.create(body({tool_choice: {type: "function", function: {name: "get_weather"}},
        parallel_tool_calls: false, temperature: 0.9, seed}));
      const got = calls(res);
      assert.equal(got.length, 1, JSON.stringify(res.choices[0]!.message));
      assert.equal(got[0]!.name, "get_weather");
      assert.ok(ajv.validate(weather.function.parameters, got[0]!.args), `seed ${seed}: ${JSON.stringify(got[0]!.args)} ${JSON.stringify(ajv.errors)}`);
      assert.equal(res.choices[0]!.finish_reason, "tool_calls");
    }
  });

  test("streamed: the SDK's stream helper assembles the same call, arguments arriving in pieces", async () => {
    const req = body({tool_choice: {type: "function", function: {name: "get_weather"}}, parallel_tool_calls: false});
    const plain = await server.client.chat.completions.create(req);
    const stream = server.client.chat.completions.stream({...req, stream: true});
    let argDeltas = 0;
    stream.on("chunk", (chunk) => {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) if (tc.function?.arguments) argDeltas++;
    });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.finish_reason, "tool_calls");
    assert.deepEqual(calls(final), calls(plain), "greedy: streamed and not streamed agree");
    assert.ok(argDeltas > 1, `arguments should stream (got ${argDeltas} deltas)`);
  });

  test("tool_choice none: no tool_calls", async () => {
    const res = await server.client.chat.completions.create(body({tool_choice: "none", max_tokens: 40}));
    assert.equal(res.choices[0]!.message.tool_calls, undefined);
    assert.notEqual(res.choices[0]!.finish_reason, "tool_calls");
    assert.equal(typeof res.choices[0]!.message.content, "string");
  });

  test("a tool result goes back through the template and the model answers", async () => {
    const res = await server.client.chat.completions.create({
      model: "m",
      messages: [
        {role: "user", content: "What is the weather in Paris?"},
        {role: "assistant", content: null, tool_calls: [{id: "call_1", type: "function", function: {name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}'}}]},
        {role: "tool", tool_call_id: "call_1", content: '{"temperature": 18}'},
      ],
      tools: [weather],
      tool_choice: "none",
      max_tokens: 30,
      temperature: 0,
    });
    assert.equal(typeof res.choices[0]!.message.content, "string");
    assert.ok(res.usage!.completion_tokens > 0);
  });

  test("health lists the strict-tool rules and the call syntax", async () => {
    const h = (await get(`${server.url}/health`)).body as {structured_output: {tool_call_syntax: string; strict_tools: {rules: string[]; max_parameters: number; max_tools: number}}};
    assert.equal(h.structured_output.tool_call_syntax, "generic");
    assert.equal(h.structured_output.strict_tools.max_parameters, 32);
    assert.equal(h.structured_output.strict_tools.max_tools, 128);
    assert.ok(h.structured_output.strict_tools.rules.length >= 6);
  });
});
