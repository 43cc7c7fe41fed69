// Earlier tool calls reach the prompt on the test model, whose template (SmolLM2's) has no tool syntax (the generic form,
// src/pipeline/past-calls.ts): a history with a call counts more tokens than one without on every route's counter,
// a longer call counts more still, and a coding agent's follow-up (the call sent back with its result) resumes
// from the state the reply left, past the call, instead of recomputing from where the call starts. Chat clients
// send the arguments back as the string they got; Messages clients send `input` as an object, which the server
// writes back as the model wrote it.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import {post, startServer, type RunningServer} from "../../support/server.ts";

let server: RunningServer;
let anthropic: Anthropic;
before(async () => {
  server = await startServer({SVC_PARALLEL: "1", SVC_CTX_SIZE: "4096"});
  anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0, timeout: 120_000});
});
after(async () => {
  await server?.stop();
});

const QUESTION = "List the files in the current folder.";
const SCHEMA = {type: "object", properties: {command: {type: "string"}}, required: ["command"], additionalProperties: false};
const chatTools: OpenAI.Chat.Completions.ChatCompletionTool[] = [{type: "function", function: {name: "run", description: "Runs a shell command", parameters: SCHEMA}}];
const messagesTools: Anthropic.Tool[] = [{name: "run", description: "Runs a shell command", input_schema: SCHEMA as Anthropic.Tool.InputSchema}];

/** The cached prompt tokens svc reports on every reply (`timings.cache_n`). */
const cacheN = (reply: unknown) => (reply as {timings: {cache_n: number}}).timings.cache_n;

describe("past calls in the generic form", () => {
  test("a history with a call counts more tokens, and a longer call more still, on all three counters", async () => {
    const call = (command: string) => [
      {role: "user", content: [{type: "text", text: QUESTION}]},
      {role: "assistant", content: [{type: "tool_use", id: "toolu_1", name: "run", input: {command}}]},
      {role: "user", content: [{type: "tool_result", tool_use_id: "toolu_1", content: "a.txt"}]},
    ] as Anthropic.MessageParam[];
    const count = async (messages: Anthropic.MessageParam[]) => (await anthropic.messages.countTokens({model: "m", messages, tools: messagesTools})).input_tokens;
    const [short, long] = [await count(call("ls")), await count(call("ls -la --color=never /tmp/some/long/path/to/list"))];
    const none = await count([{role: "user", content: QUESTION}, {role: "assistant", content: "ok"}, {role: "user", content: "a.txt"}]);
    assert.ok(short > none, `a call adds tokens: ${short} vs ${none}`);
    assert.ok(long > short, `a longer call counts more: ${long} vs ${short}`);

    const input = (command: string) => ({model: "m", tools: [{type: "function", name: "run", parameters: SCHEMA, strict: true}], input: [
      {role: "user", content: QUESTION}, {type: "function_call", call_id: "call_1", name: "run", arguments: JSON.stringify({command})},
      {type: "function_call_output", call_id: "call_1", output: "a.txt"}]});
    const counted = await Promise.all(["ls", "ls -la --color=never /tmp/some/long/path/to/list"].map(async (command) =>
      (await post(`${server.url}/v1/responses/input_tokens`, input(command))).body.input_tokens as number));
    assert.ok(counted[1]! > counted[0]!, `Responses input_tokens: ${counted.join(" vs ")}`);

    const chatPrompt = async (command: string) => {
      const res = await server.client.chat.completions.create({model: "m", max_tokens: 1, temperature: 0, tools: chatTools, messages: [
        {role: "user", content: QUESTION},
        {role: "assistant", content: null, tool_calls: [{id: "call_1", type: "function", function: {name: "run", arguments: JSON.stringify({command})}}]},
        {role: "tool", tool_call_id: "call_1", content: "a.txt"}]});
      return res.usage!.prompt_tokens;
    };
    const [chatShort, chatLong] = [await chatPrompt("ls"), await chatPrompt("ls -la --color=never /tmp/some/long/path/to/list")];
    assert.ok(chatLong > chatShort, `chat prompt_tokens: ${chatLong} vs ${chatShort}`);
  });

  test("chat: the follow-up with the call and its result resumes past the call", async () => {
    const params = {model: "m", temperature: 0, max_tokens: 48, tools: chatTools, tool_choice: {type: "function" as const, function: {name: "run"}}};
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{role: "user", content: QUESTION}];
    const first = await server.client.chat.completions.create({...params, messages});
    assert.equal(first.choices[0]!.finish_reason, "tool_calls", JSON.stringify(first.choices[0]));
    const call = first.choices[0]!.message.tool_calls![0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    const followUp = await server.client.chat.completions.create({...params, tool_choice: "auto", max_tokens: 4, messages: [...messages,
      {role: "assistant", content: null, tool_calls: [call]}, {role: "tool", tool_call_id: call.id, content: "a.txt\nb.txt"}]});
    // Everything the first request evaluated: its prompt and its reply (the last token of a reply is sampled but never
    // evaluated unless the reply ended on its own: then the end-of-turn token is the template's own, and is kept too).
    const through = first.usage!.prompt_tokens + first.usage!.completion_tokens - 1;
    assert.ok(cacheN(followUp) >= through, `resumed at ${cacheN(followUp)}, the call ends at ${through} (prompt ${first.usage!.prompt_tokens})`);
  });

  test("messages: tool_use input comes back as an object, and the follow-up still resumes past the call", async () => {
    // One call: the test model never closes a list of calls by itself, so the client asks for one.
    const params = {model: "m", temperature: 0, max_tokens: 48, tools: messagesTools, tool_choice: {type: "tool" as const, name: "run", disable_parallel_tool_use: true}};
    const messages: Anthropic.MessageParam[] = [{role: "user", content: "Show the disk usage of this folder."}];
    const first = await anthropic.messages.create({...params, messages});
    assert.equal(first.stop_reason, "tool_use", JSON.stringify(first.content));
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
    // The follow-up keeps the client's one-call setting (it shapes the tool instructions at the top of the prompt).
    const followUp = await anthropic.messages.create({...params, tool_choice: {type: "auto", disable_parallel_tool_use: true}, max_tokens: 4, messages: [...messages,
      {role: "assistant", content: first.content}, {role: "user", content: [{type: "tool_result", tool_use_id: use.id, content: "12K ."}]}]});
    // The first prompt's length: input_tokens counts only what was not read from the cache.
    const through = first.usage.input_tokens + first.usage.cache_read_input_tokens! + first.usage.output_tokens - 1;
    assert.ok(cacheN(followUp) >= through, `resumed at ${cacheN(followUp)}, the call ends at ${through} (prompt ${first.usage.input_tokens + first.usage.cache_read_input_tokens!})`);
  });
});
