// The Responses-style route end to end through the official openai client: plain replies with usage and
// timings, the cache, structured output, a tool round trip and sessions on the test model; reasoning
// items, summaries and a deterministic call on a scripted thinking model. (The SDK's strict stream
// accumulator, the raw event stream and the refusals run in-process: integration/responses.)

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import ajvModule from "ajv/dist/2020.js";
import OpenAI from "openai";
import type {Response, ResponseCreateParamsNonStreaming, ResponseFunctionToolCall, ResponseInputItem, ResponseReasoningItem, ResponseStreamEvent}
  from "openai/resources/responses/responses";
import {buildScenario} from "../fixtures/scripted-model/build.ts";
import {QWEN3_CODER_STYLE_TEMPLATE} from "../fixtures/scripted-model/templates.ts";
import {reusableEnd, reuseMatch, startServer, TIMING_FIELDS, type RunningServer} from "../../support/server.ts";

const ajv = new ajvModule.default({strict: false, allErrors: true});
type WithTimings = {timings: Record<string, number>};

const weatherParams = {
  type: "object",
  properties: {city: {type: "string", minLength: 1, maxLength: 40}, unit: {type: "string", enum: ["celsius", "fahrenheit"]}},
  required: ["city", "unit"],
  additionalProperties: false,
};
const weather = {type: "function" as const, name: "get_weather", description: "Current weather for a city", strict: true, parameters: weatherParams};

const calls = (res: Response) => res.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call");
const types = (res: Response) => res.output.map((o) => o.type);

describe("responses on the test model", () => {
  let server: RunningServer;
  let client: OpenAI;
  before(async () => {
    server = await startServer({SVC_PARALLEL: "2", SVC_FORK: "1"});
    client = server.client;
  });
  after(async () => {
    await server?.stop();
  });

  const ask = (input: ResponseCreateParamsNonStreaming["input"], extra: Partial<ResponseCreateParamsNonStreaming> = {}): ResponseCreateParamsNonStreaming =>
    ({model: "m", input, max_output_tokens: 24, temperature: 0, ...extra});

  test("create: a message item, usage, timings and the Response fields", async () => {
    const res = await client.responses.create(ask("What is the capital of France?", {instructions: "Answer in one sentence."}));
    assert.equal(res.object, "response");
    assert.match(res.id, /^resp_/);
    assert.equal(res.model, "svc-nx3.8-flash-next");
    assert.equal(res.instructions, "Answer in one sentence.");
    assert.ok(res.status === "completed" || res.status === "incomplete");
    assert.deepEqual(types(res), ["message"]);
    const msg = res.output[0] as OpenAI.Responses.ResponseOutputMessage;
    assert.match(msg.id, /^msg_/);
    assert.equal(msg.role, "assistant");
    assert.equal(msg.content[0]!.type, "output_text");
    assert.ok(res.output_text.length > 0, "the SDK finds the text");
    const u = res.usage!;
    assert.ok(u.input_tokens > 10);
    assert.ok(u.output_tokens >= 1 && u.output_tokens <= 24);
    assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
    assert.equal(u.output_tokens_details.reasoning_tokens, 0);
    const {timings} = res as unknown as WithTimings;
    assert.deepEqual(Object.keys(timings).sort(), [...TIMING_FIELDS].sort());
    assert.equal(timings.predicted_n, u.output_tokens);
  });

  test("the same prompt again reports cached input tokens", async () => {
    const params = ask("Name a large animal that lives in the ocean.", {instructions: "You are a zoologist who answers briefly."});
    await client.responses.create(params);
    const again = await client.responses.create(params);
    const cached = again.usage!.input_tokens_details.cached_tokens;
    assert.ok(cached > 0 && cached < again.usage!.input_tokens, `cached ${cached} of ${again.usage!.input_tokens}`);
    assert.equal((again as unknown as WithTimings).timings.cache_n, cached);
  });

  test("text.format json_schema: the reply validates; json_object parses", async () => {
    const schema = {type: "object", properties: {name: {type: "string", maxLength: 30}, age: {type: "integer"}}, required: ["name", "age"], additionalProperties: false};
    const res = await client.responses.create(ask("Invent a person.", {max_output_tokens: 60, text: {format: {type: "json_schema", name: "person", schema, strict: true}}}));
    assert.equal(res.status, "completed");
    assert.ok(ajv.validate(schema, JSON.parse(res.output_text)), `${res.output_text} ${JSON.stringify(ajv.errors)}`);
    const obj = await client.responses.create(ask("Describe a cat as JSON.", {max_output_tokens: 200, text: {format: {type: "json_object"}}}));
    assert.equal(obj.status, "completed");
    const parsed = JSON.parse(obj.output_text);
    assert.ok(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed));
  });

  test("tool round trip: a function_call item, then its output fed back is answered", async () => {
    const first = await client.responses.create(ask("What is the weather in Paris today?",
      {tools: [{type: "web_search"}, weather], tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200}));
    assert.equal(first.status, "completed");
    const [call, ...more] = calls(first);
    assert.ok(call, JSON.stringify(first.output));
    assert.equal(more.length, 0);
    assert.match(call.id!, /^fc_/);
    assert.ok(call.call_id.length > 0);
    assert.equal(call.name, "get_weather");
    assert.equal(call.status, "completed");
    assert.ok(ajv.validate(weatherParams, JSON.parse(call.arguments)), `${call.arguments} ${JSON.stringify(ajv.errors)}`);

    const input: ResponseInputItem[] = [{role: "user", content: "What is the weather in Paris today?"}, ...first.output as ResponseInputItem[],
      {type: "function_call_output", call_id: call.call_id, output: '{"temperature_c": 18, "sky": "clear"}'}];
    const second = await client.responses.create(ask(input, {tools: [weather], tool_choice: "none", max_output_tokens: 40}));
    assert.deepEqual(types(second), ["message"]);
    assert.ok(second.output_text.length > 0);
    // The tool's output is in the prompt: without it the same request counts fewer input tokens.
    const withoutOutput = await client.responses.inputTokens.count({model: "m", input: input.slice(0, -1), tools: [weather], tool_choice: "none"});
    assert.ok(second.usage!.input_tokens > withoutOutput.input_tokens, `${second.usage!.input_tokens} vs ${withoutOutput.input_tokens}`);
  });

  test("streamed call: arguments arrive in pieces and the SDK assembles the same call", async () => {
    const params = ask("What is the weather in Rome?", {tools: [weather], tool_choice: {type: "function", name: "get_weather"}, parallel_tool_calls: false, max_output_tokens: 200});
    const plain = await client.responses.create(params);
    const stream = client.responses.stream({...params, stream: true});
    let argDeltas = 0;
    stream.on("response.function_call_arguments.delta", () => argDeltas++);
    const final = await stream.finalResponse();
    assert.deepEqual(calls(final).map((c) => [c.name, c.arguments]), calls(plain).map((c) => [c.name, c.arguments]));
    assert.equal(calls(final).length, 1);
    assert.ok(argDeltas > 1, `arguments should stream (${argDeltas} deltas)`);
  });

  test("a namespace wrapper: its function is offered, and the call names the namespace", async () => {
    const res = await client.responses.create(ask("Weather in Oslo?", {max_output_tokens: 200, tool_choice: {type: "function", name: "get_weather"},
      tools: [{type: "namespace", name: "weather_server", description: "Weather tools", tools: [{type: "function", name: "get_weather", parameters: weatherParams}]}] as unknown as OpenAI.Responses.Tool[]}));
    const [call] = calls(res);
    assert.equal(call?.name, "get_weather");
    assert.equal(call?.namespace, "weather_server");
  });

  test("input_tokens counts the prompt that create then uses", async () => {
    const params = ask("How far away is the Moon?", {instructions: "Be exact."});
    const counted = await client.responses.inputTokens.count({model: "m", input: params.input, instructions: params.instructions});
    const res = await client.responses.create(params);
    assert.equal(counted.input_tokens, res.usage!.input_tokens);
  });

  test("previous_response_id with the history in input is accepted", async () => {
    const res = await client.responses.create(ask([{role: "user", content: "Hi"}, {role: "assistant", content: "Hello!"}, {role: "user", content: "How are you?"}],
      {previous_response_id: "resp_earlier"}));
    assert.equal(res.previous_response_id, "resp_earlier");
    assert.ok(res.output_text.length > 0);
  });

  test("sessions: X-Svc-Keep keeps the reply's end state, X-Svc-From resumes the conversation from it", async () => {
    const question = ask("What is a compass for?", {instructions: "Answer in one short sentence."});
    const kept = await client.responses.create(question, {headers: {"X-Svc-Keep": "resp-conv"}}).withResponse();
    assert.equal(kept.response.headers.get("x-svc-keep"), "accepted");
    await server.waitForLog(/session handle (?:kept|replaced) name=resp-conv /, 90_000);
    const first = kept.data;
    const input: ResponseInputItem[] = [{role: "user", content: "What is a compass for?"}, ...first.output as ResponseInputItem[], {role: "user", content: "How do I hold it?"}];
    const resumed = await client.responses.create(ask(input, {instructions: question.instructions}), {headers: {"X-Svc-From": "resp-conv"}}).withResponse();
    assert.equal(resumed.response.headers.get("x-svc-from"), "used");
    const need = reusableEnd(await reuseMatch(server), first.usage!.input_tokens, first.usage!.output_tokens, first.incomplete_details?.reason === "max_output_tokens");
    assert.ok(resumed.data.usage!.input_tokens_details.cached_tokens >= need, `reused ${resumed.data.usage!.input_tokens_details.cached_tokens}; the kept reply ended at ${need}`);
  });

});

describe("responses on a scripted thinking model", () => {
  const THINK = ["<think>", "\nweather?\n", "</think>"];
  const CALL = ["\n<tool_call>", "\n<function=get_weather>", "\n<parameter=city>\nParis\n</parameter>", "\n</function>\n</tool_call>"];
  const tools = [{type: "function" as const, name: "get_weather", strict: false,
    parameters: {type: "object", properties: {city: {type: "string"}}, required: ["city"]}}];
  let dir: string;
  let server: RunningServer;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-responses-"));
    const scenario = await buildScenario(dir, "think-text-call", {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE,
      reply: [...THINK, "\n\nLet me check.", ...CALL, "<|im_end|>"]});
    server = await startServer({SVC_MODEL: scenario.path, SVC_PARALLEL: "1"});
  });
  after(async () => {
    await server?.stop();
    if (dir) await rm(dir, {recursive: true, force: true});
  });

  const params = (extra: Partial<ResponseCreateParamsNonStreaming> = {}): ResponseCreateParamsNonStreaming =>
    ({model: "m", input: "Weather in Paris?", tools, temperature: 0, max_output_tokens: 120, ...extra});

  test("a reasoning item before the message, then the call; reasoning tokens counted", async () => {
    const res = await server.client.responses.create(params());
    assert.deepEqual(types(res), ["reasoning", "message", "function_call"]);
    const rs = res.output[0] as ResponseReasoningItem;
    assert.match(rs.id, /^rs_/);
    assert.deepEqual(rs.content, [{type: "reasoning_text", text: "weather?"}]);
    assert.deepEqual(rs.summary, []);
    assert.equal(rs.encrypted_content, undefined);
    assert.equal(res.output_text, "Let me check.");
    const [call] = calls(res);
    assert.equal(call!.name, "get_weather");
    assert.deepEqual(JSON.parse(call!.arguments), {city: "Paris"});
    assert.equal(res.status, "completed");
    const reasoningTokens = res.usage!.output_tokens_details.reasoning_tokens;
    assert.ok(reasoningTokens > 0 && reasoningTokens < res.usage!.output_tokens, `reasoning_tokens ${reasoningTokens}`);
  });

  test("streamed: reasoning_text deltas, and with reasoning.summary the same text as summary_text", async () => {
    const plain = await server.client.responses.create(params({reasoning: {summary: "auto"}}));
    assert.deepEqual((plain.output[0] as ResponseReasoningItem).summary, [{type: "summary_text", text: "weather?"}]);

    for (const summary of [false, true]) {
      const stream = server.client.responses.stream({...params(summary ? {reasoning: {effort: "high", summary: "auto"}} : {}), stream: true});
      const events: ResponseStreamEvent[] = [];
      stream.on("event", (e) => events.push(e));
      const final = await stream.finalResponse();
      const text = (type: string) => events.filter((e) => e.type === type).map((e) => (e as {delta: string}).delta).join("");
      assert.equal(text("response.reasoning_text.delta"), "weather?");
      assert.equal(text("response.reasoning_summary_text.delta"), summary ? "weather?" : "");
      assert.equal(events.some((e) => e.type === "response.reasoning_summary_part.added"), summary);
      assert.deepEqual(types(final), ["reasoning", "message", "function_call"]);
      const rs = final.output[0] as ResponseReasoningItem;
      assert.deepEqual(rs.content, [{type: "reasoning_text", text: "weather?"}]);
      assert.deepEqual(rs.summary, summary ? [{type: "summary_text", text: "weather?"}] : []);
      assert.equal(final.output_text, "Let me check.");
      assert.deepEqual(JSON.parse(calls(final)[0]!.arguments), {city: "Paris"});
      // Each item is closed before the next opens: its output_item.done comes before the next added.
      const itemEvents = events.filter((e) => e.type === "response.output_item.added" || e.type === "response.output_item.done")
        .map((e) => `${e.type.slice("response.output_item.".length)}:${(e as {output_index: number}).output_index}`);
      assert.deepEqual(itemEvents, ["added:0", "done:0", "added:1", "done:1", "added:2", "done:2"]);
    }
  });

  test("the whole output sent back (reasoning item included) with the call's output is accepted", async () => {
    const first = await server.client.responses.create(params());
    const call = calls(first)[0]!;
    const input: ResponseInputItem[] = [{role: "user", content: "Weather in Paris?"}, ...first.output as ResponseInputItem[],
      {type: "function_call_output", call_id: call.call_id, output: "sunny"}];
    const second = await server.client.responses.create(params({input, previous_response_id: first.id}));
    assert.equal(second.status, "completed");
    assert.ok(second.usage!.input_tokens > first.usage!.input_tokens);
  });

  test("reasoning.effort none turns thinking off: the prompt gains the template's empty think block", async () => {
    const count = async (effort?: "none" | "high") =>
      (await server.client.responses.inputTokens.count({model: "m", input: "Weather in Paris?", ...(effort ? {reasoning: {effort}} : {})})).input_tokens;
    const on = await count();
    assert.equal(await count("high"), on);
    assert.ok(await count("none") > on);
  });
});
