// The Messages-style route through the official Anthropic client: countTokens, prefill, tools, structured
// output, stop sequences, the cap and the prompt cache on the test model (support/test-model.ts). Thinking blocks, their
// signatures and replay on a scripted thinking model behind an API key. (The event stream against the SDK's
// stream().finalMessage(), the aliases, the refusals and the 401 shape run in-process: integration/messages
// and integration/auth.)

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type {MessageCreateParamsNonStreaming, MessageParam, ThinkingBlock, ToolUseBlock} from "@anthropic-ai/sdk/resources/messages";
import ajvModule from "ajv/dist/2020.js";
import {buildScenario} from "../fixtures/scripted-model/build.ts";
import {QWEN3_CODER_STYLE_TEMPLATE} from "../fixtures/scripted-model/templates.ts";
import {reusableEnd, reuseMatch, sealCount, sealedReplies, startServer, type RunningServer} from "../../support/server.ts";

const ajv = new ajvModule.default({strict: false, allErrors: true});
// Room for the forced call before its budget's closing is due: on a replica the closing picks among the replica's 64 likeliest
// tokens, which for the test model rarely hold the call's next key, and it then spells the key a character at a time.
const CAP = 96;
const weather = {name: "get_weather", description: "Current weather for a city", strict: true,
  input_schema: {type: "object" as const, properties: {city: {type: "string", minLength: 1, maxLength: 30}, unit: {type: "string", enum: ["celsius", "fahrenheit"]}},
    required: ["city", "unit"], additionalProperties: false}};

describe("messages on the test model", () => {
  let server: RunningServer;
  let anthropic: Anthropic;
  before(async () => {
    server = await startServer({SVC_PARALLEL: "2", SVC_MAX_TOKENS_CAP: String(CAP)});
    anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0, timeout: 300_000});
  });
  after(async () => {
    await server?.stop();
  });

  const ask = (content: string, extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming =>
    // temperature is not in this SDK's types any more; the server still reads it (greedy replies compare exactly).
    ({model: "claude-any", max_tokens: 12, temperature: 0, messages: [{role: "user", content}], ...extra}) as MessageCreateParamsNonStreaming;

  test("system as blocks equals system as a string; a system turn inside messages is user text", async () => {
    const count = (body: object) => anthropic.messages.countTokens({model: "m", messages: [], ...body} as Anthropic.MessageCountTokensParams);
    const asString = await count({system: "Be kind.", messages: [{role: "user", content: "Hi"}]});
    const asBlocks = await count({system: [{type: "text", text: "Be kind."}], messages: [{role: "user", content: "Hi"}]});
    assert.equal(asBlocks.input_tokens, asString.input_tokens);
    const inside = await count({messages: [{role: "system", content: "Be kind."}, {role: "assistant", content: "OK."}, {role: "user", content: "Hi"}]});
    const asUser = await count({messages: [{role: "user", content: "Be kind."}, {role: "assistant", content: "OK."}, {role: "user", content: "Hi"}]});
    assert.equal(inside.input_tokens, asUser.input_tokens);
  });

  test("a final assistant message is continued (prefill)", async () => {
    const res = await anthropic.messages.create(ask("", {max_tokens: 4,
      messages: [{role: "user", content: "Name a color."}, {role: "assistant", content: "My favourite color is"}]}));
    assert.equal(res.content[0]?.type, "text");
    assert.ok(!(res.content[0] as Anthropic.TextBlock).text.startsWith("My favourite"), "the reply continues after the prefill");
  });

  test("a forced strict tool call gives tool_use with a schema-valid input; its tool_result gets a reply", async () => {
    const params = ask("What is the weather in Paris?", {max_tokens: CAP, tools: [weather], tool_choice: {type: "tool", name: "get_weather", disable_parallel_tool_use: true}});
    const res = await anthropic.messages.create(params);
    assert.equal(res.stop_reason, "tool_use");
    const calls = res.content.filter((b): b is ToolUseBlock => b.type === "tool_use");
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.name, "get_weather");
    assert.match(calls[0]!.id, /^toolu_/);
    assert.ok(ajv.validate(weather.input_schema, calls[0]!.input), JSON.stringify(ajv.errors));

    const streamed = await anthropic.messages.stream(params).finalMessage();
    assert.deepEqual(streamed.content.filter((b) => b.type === "tool_use").map((b) => (b as ToolUseBlock).input), [calls[0]!.input]);

    const next = await anthropic.messages.create({...params, max_tokens: 6, tool_choice: {type: "none"}, messages: [...params.messages,
      {role: "assistant", content: res.content},
      {role: "user", content: [{type: "tool_result", tool_use_id: calls[0]!.id, content: [{type: "text", text: "18 degrees, sunny"}]}]}]});
    assert.ok(["end_turn", "max_tokens"].includes(next.stop_reason!));
    assert.equal(next.content.filter((b) => b.type === "tool_use").length, 0);
  });

  test("output_config.format binds the reply to the schema", async () => {
    const schema = {type: "object", properties: {city: {type: "string", maxLength: 20}, country: {type: "string", maxLength: 20}},
      required: ["city", "country"], additionalProperties: false};
    const res = await anthropic.messages.create(ask("Name a city and its country.", {max_tokens: CAP, output_config: {format: {type: "json_schema", schema}}}));
    assert.equal(res.stop_reason, "end_turn");
    const text = (res.content[0] as Anthropic.TextBlock).text;
    assert.ok(ajv.validate(schema, JSON.parse(text)), `${text}: ${JSON.stringify(ajv.errors)}`);
  });

  test("a stop sequence ends the reply before it; max_tokens above the cap runs with the cap, logged once", async () => {
    const params = ask("Count from 1 to 20, separated by commas.", {max_tokens: 16});
    const free = (await anthropic.messages.create(params)).content.map((b) => (b as Anthropic.TextBlock).text).join("");
    // The stop sequence is a word from the middle of the free greedy reply (the test model writes words, not a count).
    const words = free.trim().split(/\s+/);
    const stop = words[Math.floor(words.length / 2)]!;
    const at = free.indexOf(stop);
    assert.ok(at > 0, `the free reply contains ${JSON.stringify(stop)} after its start: ${free}`);
    for (let i = 0; i < 2; i++) {
      const res = await anthropic.messages.create({...params, max_tokens: 100_000, stop_sequences: [stop, "never-seen"]});
      assert.equal(res.stop_reason, "stop_sequence");
      assert.equal(res.stop_sequence, stop);
      assert.equal((res.content[0] as Anthropic.TextBlock).text, free.slice(0, at));
    }
    assert.equal(server.logs.filter((l) => /max_tokens above max_tokens_cap/.test(l)).length, 1);
  });

  test("the next turn (once the reply is sealed) resumes from the previous reply in the prompt cache", async () => {
    const first: MessageParam[] = [{role: "user", content: "List four fruits that are red."}];
    const seals = await sealCount(server);
    const r1 = await anthropic.messages.create(ask("", {messages: first, max_tokens: 8}));
    await sealedReplies(server, seals + 1);
    const r2 = await anthropic.messages.create(ask("", {max_tokens: 2, messages: [...first, {role: "assistant", content: r1.content}, {role: "user", content: "Which is sweetest?"}]}));
    const end = reusableEnd(await reuseMatch(server), r1.usage.input_tokens + r1.usage.cache_read_input_tokens!, r1.usage.output_tokens, r1.stop_reason === "max_tokens");
    assert.ok(r2.usage.cache_read_input_tokens! >= end, `reused ${r2.usage.cache_read_input_tokens}; the first reply ended at ${end}`);
  });

});

describe("thinking blocks and the key check (scripted thinking model)", () => {
  let dir: string;
  let server: RunningServer;
  let anthropic: Anthropic;
  const KEY = "messages-test-key";
  // One fixed reply: a reasoning block, then a Qwen-XML call (the scripted model answers every prompt with it).
  const REPLY = ["<think>", "\nweather?\n", "</think>", "\n\n", "<tool_call>", "\n<function=get_weather>", "\n<parameter=city>\nParis\n</parameter>",
    "\n</function>\n</tool_call>", "<|im_end|>"];
  const tool = {name: "get_weather", input_schema: {type: "object" as const, properties: {city: {type: "string"}}, required: ["city"]}};
  const first: MessageParam[] = [{role: "user", content: "Weather in Paris?"}];
  const params = (extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming =>
    ({model: "m", max_tokens: 120, temperature: 0, thinking: {type: "enabled", budget_tokens: 60}, tools: [tool], messages: first, ...extra}) as MessageCreateParamsNonStreaming;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-messages-"));
    const scenario = await buildScenario(dir, "think-call", {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE, reply: REPLY});
    server = await startServer({SVC_MODEL: scenario.path, SVC_PARALLEL: "1", SVC_API_KEY: KEY});
    anthropic = new Anthropic({baseURL: server.url, apiKey: KEY, maxRetries: 0});
  });
  after(async () => {
    await server?.stop();
    if (dir) await rm(dir, {recursive: true, force: true});
  });

  test("a thinking block with its signature, then tool_use; streamed with one signature_delta before the block stops", async () => {
    const res = await anthropic.messages.create(params());
    assert.deepEqual(res.content.map((b) => b.type), ["thinking", "tool_use"]);
    const thinking = res.content[0] as ThinkingBlock;
    assert.equal(thinking.thinking, "weather?");
    assert.match(thinking.signature, /^svc1\.[A-Za-z0-9_-]+\.[0-9a-f]{16}$/);
    assert.deepEqual((res.content[1] as ToolUseBlock).input, {city: "Paris"});
    assert.equal(res.stop_reason, "tool_use");
    assert.ok(res.usage.output_tokens_details!.thinking_tokens > 0);

    const events: string[] = [];
    const stream = anthropic.messages.stream(params());
    stream.on("streamEvent", (e) => events.push(e.type === "content_block_delta" ? e.delta.type : e.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content[0], thinking);
    assert.deepEqual((final.content[1] as ToolUseBlock).input, {city: "Paris"});
    assert.equal(events.filter((e) => e === "signature_delta").length, 1);
    assert.equal(events[events.indexOf("signature_delta") + 1], "content_block_stop");
  });

  test("display omitted: the thinking text is left out, the signature is whole", async () => {
    const full = (await anthropic.messages.create(params())).content[0] as ThinkingBlock;
    const omitted = (await anthropic.messages.create(params({thinking: {type: "enabled", budget_tokens: 60, display: "omitted"}}))).content[0] as ThinkingBlock;
    assert.equal(omitted.thinking, "");
    assert.equal(omitted.signature, full.signature);
  });

  test("replay: the signature's reasoning goes back into the prompt, also with the text emptied", async () => {
    const r1 = await anthropic.messages.create(params());
    const [thinking, call] = r1.content as [ThinkingBlock, ToolUseBlock];
    const turn2 = (blocks: Anthropic.ContentBlockParam[]): MessageParam[] =>
      [...first, {role: "assistant", content: blocks}, {role: "user", content: [{type: "tool_result", tool_use_id: call.id, content: "sunny"}]}];
    const count = async (messages: MessageParam[]) => (await anthropic.messages.countTokens({model: "m", thinking: params().thinking, tools: [tool], messages})).input_tokens;
    const withBlock = await count(turn2([thinking, call]));
    assert.equal(await count(turn2([{...thinking, thinking: ""}, call])), withBlock, "the signature, not the text, is replayed");
    assert.ok(withBlock > await count(turn2([call])), "without the block the reasoning is not in the prompt");

    const r2 = await anthropic.messages.create(params({messages: turn2([{...thinking, thinking: ""}, call])}));
    assert.equal(r2.usage.input_tokens + r2.usage.cache_read_input_tokens!, withBlock);
    // The turn resumes from the first request's state: its whole prompt, and into the reply as far as the
    // replayed reply re-tokenizes to the tokens generated. Every prompt cuts where an assistant reply
    // starts, which is where the first request's sealed state was cut (the end of its prompt). This
    // scripted model spells its reply partly with minted tokens (a lone "\n" may be used only once), so the
    // re-tokenized reply departs from it after "<think>"; a real model's reply resumes further.
    const r1Prompt = r1.usage.input_tokens + r1.usage.cache_read_input_tokens!;
    assert.ok(r2.usage.cache_read_input_tokens! >= r1Prompt, `turn 2 reused ${r2.usage.cache_read_input_tokens} tokens; turn 1's prompt had ${r1Prompt}`);

    const altered = `${thinking.signature.slice(0, -1)}${thinking.signature.endsWith("0") ? "1" : "0"}`;
    const refused = await anthropic.messages.create(params({messages: turn2([{...thinking, signature: altered}, call])})).catch((e: unknown) => e);
    assert.ok(refused instanceof Anthropic.BadRequestError);
    assert.match(refused.message, /messages\[1\]\.content\[0\]\.signature/);
  });

  test("thinking is off unless asked: absent and disabled render the template's thinking-off prompt", async () => {
    const count = async (thinking?: Anthropic.ThinkingConfigParam) =>
      (await anthropic.messages.countTokens({model: "m", messages: first, ...(thinking ? {thinking} : {})})).input_tokens;
    const absent = await count();
    assert.equal(await count({type: "disabled"}), absent);
    const on = await count({type: "adaptive"});
    assert.equal(await count({type: "enabled", budget_tokens: 100}), on);
    assert.ok(absent > on, "the thinking-off prompt adds an empty think block");
    const effortNone = await anthropic.messages.countTokens({model: "m", messages: first, thinking: {type: "adaptive"},
      output_config: {effort: "none" as never}}).catch((e: unknown) => e);
    assert.ok(effortNone instanceof Anthropic.BadRequestError);
  });

});
