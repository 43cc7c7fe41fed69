// Thinking, Qwen-XML tool calls, strict tools and schemas after a reasoning block or a preamble, end to
// end on scripted models (test/fixtures/scripted-model): each model writes one fixed reply, so what the
// server makes of it is exact. Replies are written in segments that end where the server binds a new
// grammar (a scripted model cannot recover from a token the grammar refuses, and a strict grammar that
// refuses the script is what one scenario tests on purpose).

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {buildScenario} from "../fixtures/scripted-model/build.ts";
import {QWEN3_CODER_STYLE_TEMPLATE} from "../fixtures/scripted-model/templates.ts";
import {startServer, type RunningServer} from "../../support/server.ts";

type Completion = OpenAI.Chat.Completions.ChatCompletion;
type Message = Completion["choices"][number]["message"] & {reasoning_content?: string};

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-scripted-replies-"));
});
after(async () => {
  if (dir) await rm(dir, {recursive: true, force: true});
});

/** Builds the scenario's model, starts a server on it, runs fn, stops the server. */
async function withScript(name: string, reply: string[], fn: (server: RunningServer) => Promise<void>): Promise<void> {
  const scenario = await buildScenario(dir, name, {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE, reply});
  const server = await startServer({SVC_MODEL: scenario.path, SVC_PARALLEL: "1"});
  try {
    await fn(server);
  } finally {
    await server.stop();
  }
}

const weather = (strict: boolean, properties: object = {city: {type: "string"}, unit: {type: "string", enum: ["celsius", "fahrenheit"]}}) => ({
  type: "function" as const,
  function: {name: "get_weather", strict, parameters: {type: "object", properties, required: Object.keys(properties), additionalProperties: false}},
});

const ask = (extra: Record<string, unknown> = {}) => ({
  model: "m",
  messages: [{role: "user" as const, content: "Weather in Paris?"}],
  temperature: 0,
  max_tokens: 120,
  ...extra,
}) as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

function toolCalls(res: Completion): {name: string; args: unknown}[] {
  return (res.choices[0]!.message.tool_calls ?? []).map((c) => {
    const fn = (c as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function;
    return {name: fn.name, args: JSON.parse(fn.arguments)};
  });
}

const THINK = ["<think>", "\nweather?\n", "</think>"];
const CALL = (params: [string, string][]) => [
  "<tool_call>", "\n<function=get_weather>",
  ...params.map(([k, v]) => `\n<parameter=${k}>\n${v}\n</parameter>`),
  "\n</function>\n</tool_call>",
];

describe("reasoning split (scripted thinking model)", () => {
  test("reasoning_content apart from content, reasoning_tokens counted, streamed as reasoning deltas", async () => {
    await withScript("think-text", [...THINK, "\n\nIt is sunny.", "<|im_end|>"], async (server) => {
      const res = await server.client.chat.completions.create(ask());
      const msg = res.choices[0]!.message as Message;
      assert.equal(msg.reasoning_content, "weather?");
      assert.equal(msg.content, "It is sunny.");
      assert.equal(res.choices[0]!.finish_reason, "stop");
      const reasoningTokens = res.usage!.completion_tokens_details!.reasoning_tokens!;
      assert.ok(reasoningTokens > 0 && reasoningTokens < res.usage!.completion_tokens, `reasoning_tokens ${reasoningTokens}`);

      const stream = server.client.chat.completions.stream({...ask(), stream: true});
      let reasoning = "";
      stream.on("chunk", (chunk) => {
        reasoning += (chunk.choices[0]?.delta as {reasoning_content?: string} | undefined)?.reasoning_content ?? "";
      });
      const final = await stream.finalChatCompletion();
      assert.equal(reasoning, "weather?");
      assert.equal(final.choices[0]!.message.content, "It is sunny.");
    });
  });
});

describe("Qwen-XML tool calls (scripted)", () => {
  test("a strict call with parameters out of schema order: parsed, typed, streamed; none drops it", async () => {
    await withScript("xml-call", [...THINK, "\n\n", ...CALL([["unit", "celsius"], ["city", "Paris"]]), "<|im_end|>"], async (server) => {
      for (const strict of [true, false]) {
        const res = await server.client.chat.completions.create(ask({tools: [weather(strict)]}));
        const msg = res.choices[0]!.message as Message;
        assert.equal(res.choices[0]!.finish_reason, "tool_calls", JSON.stringify(msg));
        assert.deepEqual(toolCalls(res), [{name: "get_weather", args: {unit: "celsius", city: "Paris"}}], `strict ${strict}`);
        assert.equal(msg.reasoning_content, "weather?");
        assert.equal(msg.content, null, "no call syntax in content");
      }
      const stream = server.client.chat.completions.stream({...ask({tools: [weather(true)], parallel_tool_calls: false}), stream: true});
      let argDeltas = 0;
      stream.on("chunk", (chunk) => {
        for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) if (tc.function?.arguments) argDeltas++;
      });
      const final = await stream.finalChatCompletion();
      assert.deepEqual(toolCalls(final), [{name: "get_weather", args: {unit: "celsius", city: "Paris"}}]);
      assert.ok(argDeltas > 1, `arguments stream (${argDeltas} deltas)`);

      const none = await server.client.chat.completions.create(ask({tools: [weather(true)], tool_choice: "none"}));
      assert.equal(none.choices[0]!.message.tool_calls, undefined);
      assert.ok(!(none.choices[0]!.message.content ?? "").includes("<"), `no call syntax: ${none.choices[0]!.message.content}`);
    });
  });

  test("strict refuses an undeclared parameter the model writes; without strict it comes through", async () => {
    await withScript("xml-undeclared", ["<tool_call>", "\n<function=get_weather>", "\n<parameter=town>\nParis\n</parameter>",
      "\n</function>\n</tool_call>", "<|im_end|>"], async (server) => {
      const loose = await server.client.chat.completions.create(ask({tools: [weather(false, {city: {type: "string"}})]}));
      assert.deepEqual(toolCalls(loose), [{name: "get_weather", args: {town: "Paris"}}]);
      const strict = await server.client.chat.completions.create(ask({tools: [weather(true, {city: {type: "string"}})], max_tokens: 40}));
      // The grammar refuses "town" after "<parameter=": the only parameter it lets the model write is "city".
      const calls = toolCalls(strict);
      assert.ok(calls.length >= 1, JSON.stringify(strict.choices[0]!.message));
      for (const call of calls) assert.deepEqual(Object.keys(call.args as object), ["city"], JSON.stringify(call));
    });
  });

  test("parallel_tool_calls false returns the first of two calls; true returns both", async () => {
    await withScript("xml-two-calls", [...CALL([["city", "Paris"]]), "\n<tool_call>", "\n<function=get_time>",
      "\n<parameter=zone>\nCET\n</parameter>", "\n</function>\n</tool_call>", "<|im_end|>"], async (server) => {
      const tools = [weather(false, {city: {type: "string"}}), {type: "function" as const, function: {name: "get_time", parameters: {type: "object", properties: {zone: {type: "string"}}}}}];
      const both = await server.client.chat.completions.create(ask({tools}));
      assert.deepEqual(toolCalls(both).map((c) => c.name), ["get_weather", "get_time"]);
      const one = await server.client.chat.completions.create(ask({tools, parallel_tool_calls: false}));
      assert.deepEqual(toolCalls(one), [{name: "get_weather", args: {city: "Paris"}}]);
      assert.equal(one.choices[0]!.finish_reason, "tool_calls");
    });
  });
});

describe("schemas after thinking and after a preamble (scripted)", () => {
  const schema = {type: "json_schema" as const, json_schema: {name: "a", schema: {type: "object", properties: {answer: {type: "string"}}, required: ["answer"]}}};

  test("the reasoning block is free; the JSON binds after it closes", async () => {
    await withScript("think-json", [...THINK, '{"answer": "yes"}', "<|im_end|>"], async (server) => {
      const res = await server.client.chat.completions.create(ask({response_format: schema}));
      const msg = res.choices[0]!.message as Message;
      assert.equal(msg.reasoning_content, "weather?");
      assert.deepEqual(JSON.parse(msg.content!), {answer: "yes"});
    });
  });

  test("with tools, a preamble that ends the reply before any JSON: the JSON opens instead, so the reply is the schema's", async () => {
    // The model stops after its preamble; the server places "{" for the stop token, and the scripted model goes on from it.
    await withScript("preamble-stop-json", ["Let me see.", "<|im_end|>", "{", '"answer": "no"}', "<|im_end|>"], async (server) => {
      const res = await server.client.chat.completions.create(ask({response_format: schema, tools: [weather(true)]}));
      assert.equal(res.choices[0]!.message.content, '{"answer": "no"}');
      assert.equal(res.choices[0]!.finish_reason, "stop");
      const line = await server.waitForLog(new RegExp(`request id=${res.id} `));
      assert.match(line, / stop_overruled=1 /, line);
    });
  });

  test("with tools, a free preamble is dropped and the schema binds from the first {", async () => {
    await withScript("preamble-json", ["Let me see. ", "{", '"answer": "yes"}', "<|im_end|>"], async (server) => {
      const res = await server.client.chat.completions.create(ask({response_format: schema, tools: [weather(true)]}));
      assert.equal(res.choices[0]!.message.content, '{"answer": "yes"}');
      assert.equal(res.choices[0]!.message.tool_calls, undefined);
    });
  });
});
