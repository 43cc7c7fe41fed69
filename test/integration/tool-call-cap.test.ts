// SVC_MAX_TOOL_CALLS in-process over the engine double: a model that writes more calls than the cap (5 against
// a cap of 3) has its reply ended once the third call closes, as a reply of calls (chat finish_reason
// "tool_calls", Messages stop_reason "tool_use", a completed Response holding the calls), streamed and not,
// through the official SDKs; generation stops there (the tokens after the third call are never decoded), and
// the request's log line says the cap ended it. Both in a family's own syntax (Hermes JSON on a Qwen3-style
// template) and in the generic JSON form (the double's ChatML template, no tool syntax), and under a forced
// tool_choice (the case that ran away in issue 18). A reply under the cap is untouched.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import * as tok from "../doubles/byte-tokenizer.ts";
import type {Script} from "../doubles/engine-double.ts";

const QWEN3_STYLE = readFileSync(new URL("../fixtures/templates/qwen3-style.jinja", import.meta.url), "utf8");
const CAP = 3;
const CITIES = ["Oslo", "Lima", "Pune", "Baku", "Doha"];

const hermesCall = (city: string) => `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>\n`;
const genericCall = (city: string) => `{"name": "get_weather", "arguments": {"city": "${city}"}}`;
const genericReply = (n: number) => `{"tool_calls": [${CITIES.slice(0, n).map(genericCall).join(", ")}]}`;

/** The user's message says how many calls the "model" writes: "five" (over the cap) or "two" (under it). */
const callCount = (text: string) => (/five/.test(text) ? 5 : 2);
const hermesScript: Script = (prompt) => CITIES.slice(0, callCount(prompt.text)).map(hermesCall).join("");
const genericScript: Script = (prompt) => genericReply(callCount(prompt.text));
const tokens = (text: string) => tok.tokenize(text, {special: true}).length;

const schema = {type: "object", properties: {city: {type: "string"}}, required: ["city"]};
const chatTools = [{type: "function" as const, function: {name: "get_weather", parameters: schema}}];
const responsesTools = [{type: "function" as const, name: "get_weather", parameters: schema, strict: false}];
const messagesTools = [{name: "get_weather", input_schema: schema as Anthropic.Tool.InputSchema}];

/** A function call's arguments (the SDK's type also allows custom tool calls, which svc never sends). */
const cityOf = (call: object) => JSON.parse((call as {function: {arguments: string}}).function.arguments).city as string;

for (const family of ["hermes", "generic"] as const) {
  describe(`SVC_MAX_TOOL_CALLS=${CAP}, ${family} calls`, () => {
    let server: InProcessApp;
    let openai: OpenAI;
    let anthropic: Anthropic;
    before(async () => {
      server = await startInProcessApp({env: {SVC_PARALLEL: "2", SVC_MAX_TOOL_CALLS: String(CAP)}, captureLogs: true,
        ...(family === "hermes" ? {engine: {chatTemplate: QWEN3_STYLE}, script: hermesScript} : {script: genericScript})});
      const url = await server.listen();
      openai = new OpenAI({baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0});
      anthropic = new Anthropic({baseURL: url, apiKey: "unused", maxRetries: 0});
    });
    after(async () => {
      await server?.close();
    });

    const whole = family === "hermes" ? CITIES.map(hermesCall).join("") : genericReply(5);
    /** The decoded tokens stop with the cap-th call: fewer than the five calls the script holds. */
    const stoppedEarly = (generated: number) => {
      assert.ok(generated < tokens(whole), `${generated} tokens decoded; the whole script is ${tokens(whole)}`);
      // In the Hermes syntax the parser closes a call with its JSON object: not one token after that is decoded.
      const third = CITIES.slice(0, CAP).map(hermesCall).join("");
      if (family === "hermes") assert.equal(generated, tokens(third.slice(0, third.lastIndexOf("}}") + 2)));
    };
    const capLogged = (id: string) => server.waitForLog(new RegExp(`\\bid=${id}\\b.*\\btool_call_cap=${CAP}\\b`));
    const chatAsk = (content: string, extra: object = {}) =>
      ({model: "m", messages: [{role: "user" as const, content}], tools: chatTools, temperature: 0, chat_template_kwargs: {enable_thinking: false}, ...extra});

    test("chat, not streamed: exactly the cap's calls, finish_reason tool_calls, logged", async () => {
      const res = await openai.chat.completions.create(chatAsk("Weather in five cities?"));
      const choice = res.choices[0]!;
      assert.equal(choice.finish_reason, "tool_calls");
      assert.deepEqual(choice.message.tool_calls!.map(cityOf), CITIES.slice(0, CAP));
      stoppedEarly(res.usage!.completion_tokens);
      await capLogged(res.id);
    });

    test("chat, streamed, under a forced tool_choice: the same", async () => {
      const stream = openai.chat.completions.stream({...chatAsk("Weather in five cities?", {tool_choice: "required"}), stream_options: {include_usage: true}});
      const done = await stream.finalChatCompletion();
      const choice = done.choices[0]!;
      assert.equal(choice.finish_reason, "tool_calls");
      assert.deepEqual(choice.message.tool_calls!.map(cityOf), CITIES.slice(0, CAP));
      stoppedEarly(done.usage!.completion_tokens);
      await capLogged(done.id);
    });

    test("chat under the cap: every call, and the log line does not name the cap", async () => {
      const res = await openai.chat.completions.create(chatAsk("Weather in two cities?"));
      assert.equal(res.choices[0]!.finish_reason, "tool_calls");
      assert.deepEqual(res.choices[0]!.message.tool_calls!.map(cityOf), CITIES.slice(0, 2));
      const line = await server.waitForLog(new RegExp(`\\bid=${res.id}\\b`));
      assert.doesNotMatch(line, /tool_call_cap/);
    });

    test("Responses, not streamed and streamed: a completed response with exactly the cap's function calls", async () => {
      const params = {model: "m", input: "Weather in five cities?", tools: responsesTools, temperature: 0, reasoning: {effort: "none" as const}};
      const plain = await openai.responses.create(params);
      const final = await openai.responses.stream({...params, stream: true}).finalResponse();
      for (const r of [plain, final]) {
        assert.equal(r.status, "completed");
        assert.equal(r.incomplete_details, null);
        const calls = r.output.flatMap((o) => (o.type === "function_call" ? [o] : []));
        assert.deepEqual(calls.map((c) => JSON.parse(c.arguments).city), CITIES.slice(0, CAP));
        assert.equal(r.output.length, CAP, "nothing but the calls");
        stoppedEarly(r.usage!.output_tokens);
        await capLogged(r.id);
      }
    });

    test("Responses max_tool_calls below the cap bounds the reply the same way; above it, the cap still holds", async () => {
      const params = {model: "m", input: "Weather in five cities?", tools: responsesTools, temperature: 0, reasoning: {effort: "none" as const}};
      for (const [asked, got] of [[2, 2], [CAP + 1, CAP]] as const) {
        const r = await openai.responses.create({...params, max_tool_calls: asked});
        assert.equal(r.status, "completed");
        assert.equal(r.max_tool_calls, asked);
        const calls = r.output.flatMap((o) => (o.type === "function_call" ? [o] : []));
        assert.deepEqual(calls.map((c) => JSON.parse(c.arguments).city), CITIES.slice(0, got), `max_tool_calls ${asked}`);
      }
    });

    test("Messages, not streamed and streamed: stop_reason tool_use with exactly the cap's tool_use blocks", async () => {
      const params = {model: "m", max_tokens: 512, temperature: 0, tools: messagesTools, thinking: {type: "disabled" as const},
        messages: [{role: "user" as const, content: "Weather in five cities?"}]} as Anthropic.MessageCreateParamsNonStreaming;
      const plain = await anthropic.messages.create(params);
      const final = await anthropic.messages.stream(params).finalMessage();
      for (const m of [plain, final]) {
        assert.equal(m.stop_reason, "tool_use");
        const uses = m.content.filter((b) => b.type === "tool_use");
        assert.deepEqual(uses.map((b) => (b.input as {city: string}).city), CITIES.slice(0, CAP));
        assert.equal(m.content.length, CAP, "nothing but the calls");
        stoppedEarly(m.usage.output_tokens);
        await capLogged(m.id);
      }
    });
  });
}
