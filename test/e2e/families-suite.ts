// Every model family (src/templates/families) end to end: a scripted model (test/fixtures/scripted-model) with one
// of the family's real chat templates (llama.cpp's bundle) writes one reply in the family's own syntax —
// reasoning, a short text, a call with nested JSON arguments, a second call where the family writes several —
// and the real server reads it on chat, Responses and Messages, streamed and not, through the official SDKs.
// The family's `preserved` markers are control tokens of the scripted vocabulary, so the path that keeps them
// visible in the reply text runs as on a real model. The same reply then comes through strict tools, which binds
// a grammar per phase while the model writes: the reply is spelled in segments cut at the phase boundaries (a
// scripted model cannot recover from a token the grammar refuses), and a strict schema that lacks a parameter the
// script writes keeps it out.
//
// Which template each family runs with, and its script: test/fixtures/scripted-model/families.ts. A server start per
// family is most of the time, so the e2e tier (test/e2e/families.test.ts) runs one family of each call syntax shape
// and the slow tier (test/slow/families.test.ts) every other family: between them, every family.

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type {MessageCreateParamsNonStreaming, TextBlock, ThinkingBlock, ToolUseBlock} from "@anthropic-ai/sdk/resources/messages";
import type OpenAI from "openai";
import type {ResponseCreateParamsNonStreaming, ResponseFunctionToolCall, ResponseOutputMessage, ResponseReasoningItem} from "openai/resources/responses/responses";
import {FAMILIES} from "../../src/templates/families/index.ts";
import type {ModelFamily as Family} from "../../src/templates/families/family.ts";
import {buildScenario, type Scenario} from "../fixtures/scripted-model/build.ts";
import {argsObject, chatTools, familyCases, QUESTION, tools, type FamilyCase, type ToolDef} from "../fixtures/scripted-model/families.ts";
import {render} from "../fixtures/grammar/call-phases.ts";
import {startServer, type RunningServer} from "../../support/server.ts";

let cases: Map<string, FamilyCase>;
let dir: string;

/** The call syntax's shape a family writes (json, named, xml, custom by kind), or "none". */
function shapeOf(family: Family): string {
  const calls = family.calls;
  if (!calls) return "none";
  return calls.shape === "custom" ? `custom:${calls.kind}` : calls.shape;
}

/** The first family of each call shape: the ones the e2e tier runs. */
export function representative(family: Family): boolean {
  return FAMILIES.find((f) => shapeOf(f) === shapeOf(family)) === family;
}

interface Read {
  reasoning: string | null;
  texts: string[];
  calls: {name: string; args: unknown}[];
}

function expectRead(c: FamilyCase, got: Read, what: string, calls = c.calls): void {
  for (const text of got.texts) {
    const leaked = c.markers.filter((m) => text.includes(m));
    assert.deepEqual(leaked, [], `${what}: no call syntax or marker in the text ${JSON.stringify(text)}`);
  }
  assert.deepEqual(got.calls, calls.map((call) => ({name: call.name, args: argsObject(call)})), `${what}: the calls`);
  assert.equal(got.reasoning, c.reasoning, `${what}: the reasoning`);
  assert.deepEqual(got.texts, c.text === null ? [] : [c.text], `${what}: the text`);
}

type Completion = OpenAI.Chat.Completions.ChatCompletion;

function readChat(res: Completion, reasoning?: string): Read {
  const msg = res.choices[0]!.message as Completion["choices"][number]["message"] & {reasoning_content?: string};
  const calls = (msg.tool_calls ?? []).map((call) => {
    const fn = (call as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function;
    return {name: fn.name, args: JSON.parse(fn.arguments) as unknown};
  });
  const r = reasoning ?? msg.reasoning_content;
  return {reasoning: r === undefined || r === "" ? null : r, texts: msg.content === null || msg.content === "" ? [] : [msg.content], calls};
}

function readResponse(res: OpenAI.Responses.Response): Read {
  const reasoning = res.output.filter((o): o is ResponseReasoningItem => o.type === "reasoning")
    .map((o) => (o.content ?? []).map((p) => p.text).join("")).join("");
  const texts = res.output.filter((o): o is ResponseOutputMessage => o.type === "message")
    .flatMap((m) => m.content.map((p) => (p.type === "output_text" ? p.text : p.refusal)));
  const calls = res.output.filter((o): o is ResponseFunctionToolCall => o.type === "function_call")
    .map((o) => ({name: o.name, args: JSON.parse(o.arguments) as unknown}));
  return {reasoning: reasoning === "" ? null : reasoning, texts, calls};
}

function readMessage(msg: Anthropic.Message): Read {
  const reasoning = msg.content.filter((b): b is ThinkingBlock => b.type === "thinking").map((b) => b.thinking).join("");
  const texts = msg.content.filter((b): b is TextBlock => b.type === "text").map((b) => b.text);
  const calls = msg.content.filter((b): b is ToolUseBlock => b.type === "tool_use").map((b) => ({name: b.name, args: b.input}));
  return {reasoning: reasoning === "" ? null : reasoning, texts, calls};
}

/** The order of the output items (Responses) or content blocks (Messages) the reply makes. */
function order(c: FamilyCase, names: {reasoning: string; text: string; call: string}): string[] {
  return [...(c.reasoning !== null ? [names.reasoning] : []), ...(c.text !== null ? [names.text] : []), ...c.calls.map(() => names.call)];
}

/** TEST_FAMILIES=qwen3,llama3 runs only those families (a server start per family is most of the file's time). */
const only = process.env.TEST_FAMILIES?.split(",");

/** Registers the matrix for the families `pick` keeps (and TEST_FAMILIES, when set, names). */
export function familyMatrix(label: string, pick: (family: Family) => boolean): void {
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-families-"));
  cases = await familyCases();
});

after(async () => {
  if (dir) await rm(dir, {recursive: true, force: true});
});

// Families run two at a time: a server's start is mostly one core's work.
describe(label, {concurrency: 2}, () => {
  for (const family of FAMILIES.filter(pick)) {
    if (only && !only.includes(family.id)) continue;
    // One test at a time per family: the server has one region, and the past-calls test reads the state its own
    // first request left there.
    describe(family.id, {concurrency: 1}, () => {
      let c: FamilyCase;
      let scenario: Scenario;
      let server: RunningServer;
      let anthropic: Anthropic;
      let budget: number;
      before(async () => {
        c = cases.get(family.id)!;
        scenario = await buildScenario(dir, family.id, {chatTemplate: c.source, templateTail: c.templateTail, controlTokens: family.preserved, reply: c.segments});
        // One engine thread: two servers share the two cores, and llama.cpp's threads would wait on each other.
        server = await startServer({SVC_MODEL: scenario.path, SVC_PARALLEL: "1", SVC_THREADS: "1", SVC_DECODE_THREADS: "1", SVC_CTX_SIZE: "4096"});
        anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0, timeout: 120_000});
        budget = scenario.script.length + 8;
      });
      after(async () => {
        await server?.stop();
        if (scenario) await rm(scenario.path, {force: true});
      });

      const chat = (defs: ToolDef[], extra: Record<string, unknown> = {}) => ({
        model: "m", messages: [{role: "user" as const, content: QUESTION}], tools: chatTools(defs), temperature: 0, max_tokens: budget, ...extra,
      }) as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

      const chatStreamed = async (defs: ToolDef[]): Promise<Read & {finish: string}> => {
        const stream = server.client.chat.completions.stream({...chat(defs), stream: true});
        let reasoning = "";
        stream.on("chunk", (chunk) => {
          reasoning += (chunk.choices[0]?.delta as {reasoning_content?: string} | undefined)?.reasoning_content ?? "";
        });
        const final = await stream.finalChatCompletion();
        return {...readChat(final as Completion, reasoning), finish: final.choices[0]!.finish_reason};
      };

      test("the server reads the template as this family, and the prompt ends in the trigger", async () => {
        const health = await (await fetch(`${server.url}/health`)).json() as Record<string, any>;
        assert.equal(health.chat_template?.family?.id, family.id, JSON.stringify(health.chat_template));
        const tok = await (await fetch(`${server.url}/tokenize`, {method: "POST", headers: {"content-type": "application/json"},
          body: JSON.stringify({content: c.templateTail, parse_special: true})})).json() as {tokens: number[]};
        assert.equal(tok.tokens.at(-1), scenario.trigger, "the server tokenizes the prompt's tail to the trigger");
        // The family's markers are written as the control tokens they are on the real model (the first time each occurs).
        const reply = c.segments.join("");
        for (const [text, id] of scenario.controlTokens) {
          // Not the trigger's own token (GigaChat 3's <|role_sep|>\n): a scripted token precedes only once, so it is spelled.
          if (reply.includes(text) && id !== scenario.trigger) assert.ok(scenario.script.includes(id), `${JSON.stringify(text)} is written as its control token`);
        }
      });

      test("chat: reasoning_content, the text, the calls; streamed the same", async () => {
        const res = await server.client.chat.completions.create(chat(tools(false)));
        assert.equal(res.choices[0]!.finish_reason, "tool_calls", JSON.stringify(res.choices[0]!.message));
        expectRead(c, readChat(res), "chat");
        const streamed = await chatStreamed(tools(false));
        assert.equal(streamed.finish, "tool_calls");
        expectRead(c, streamed, "chat streamed");
      });

      const responsesParams = (): ResponseCreateParamsNonStreaming => ({model: "m", input: QUESTION, temperature: 0, max_output_tokens: budget,
        tools: tools(false).map((d) => ({type: "function", name: d.name, description: d.description, parameters: d.parameters, strict: false}))});

      test("responses: a reasoning item, the message, function_call items; streamed the same", async () => {
        const res = await server.client.responses.create(responsesParams());
        assert.equal(res.status, "completed");
        assert.deepEqual(res.output.map((o) => o.type), order(c, {reasoning: "reasoning", text: "message", call: "function_call"}));
        expectRead(c, readResponse(res), "responses");
        const final = await server.client.responses.stream({...responsesParams(), stream: true}).finalResponse();
        assert.deepEqual(final.output.map((o) => o.type), order(c, {reasoning: "reasoning", text: "message", call: "function_call"}));
        expectRead(c, readResponse(final), "responses streamed");
      });

      const messagesParams = (): MessageCreateParamsNonStreaming => ({model: "m", max_tokens: budget, temperature: 0, thinking: {type: "adaptive"},
        messages: [{role: "user", content: QUESTION}],
        tools: tools(false).map((d) => ({name: d.name, description: d.description, input_schema: d.parameters as Anthropic.Tool.InputSchema}))}) as MessageCreateParamsNonStreaming;

      test("messages: a thinking block, the text, tool_use blocks, stop_reason tool_use; streamed the same", async () => {
        const res = await anthropic.messages.create(messagesParams());
        assert.equal(res.stop_reason, "tool_use");
        assert.deepEqual(res.content.map((b) => b.type), order(c, {reasoning: "thinking", text: "text", call: "tool_use"}));
        expectRead(c, readMessage(res), "messages");
        const final = await anthropic.messages.stream(messagesParams()).finalMessage();
        assert.equal(final.stop_reason, "tool_use");
        assert.deepEqual(final.content.map((b) => b.type), order(c, {reasoning: "thinking", text: "text", call: "tool_use"}));
        expectRead(c, readMessage(final), "messages streamed");
      });

      test("parallel_tool_calls false: only the first call", async () => {
        const res = await server.client.chat.completions.create(chat(tools(false), {parallel_tool_calls: false}));
        assert.equal(res.choices[0]!.finish_reason, "tool_calls");
        expectRead(c, readChat(res), "chat, one call", c.calls.slice(0, 1));
      });

      test("strict tools: every phase grammar takes the script, the same calls come back", async () => {
        const res = await server.client.chat.completions.create(chat(tools(true)));
        assert.equal(res.choices[0]!.finish_reason, "tool_calls", JSON.stringify(res.choices[0]!.message));
        expectRead(c, readChat(res), "chat, strict");
      });

      test("past calls: a history with the calls tokenizes to more than one without; where svc writes them, as the model did", async () => {
        const first = await server.client.chat.completions.create(chat(tools(false)));
        const msg = first.choices[0]!.message as Completion["choices"][number]["message"] & {reasoning_content?: string};
        const calls = msg.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
        assert.equal(calls.length, c.calls.length);
        const turn = (withCalls: boolean) => ({role: "assistant", content: msg.content ?? "",
          ...(msg.reasoning_content ? {reasoning_content: msg.reasoning_content} : {}), ...(withCalls ? {tool_calls: calls} : {})});
        const promptOf = async (messages: unknown[]) => {
          const applied = await (await fetch(`${server.url}/apply-template`, {method: "POST", headers: {"content-type": "application/json"},
            body: JSON.stringify({messages, tools: chatTools(tools(false)), add_generation_prompt: false})})).json() as {prompt: string};
          const tok = await (await fetch(`${server.url}/tokenize`, {method: "POST", headers: {"content-type": "application/json"},
            body: JSON.stringify({content: applied.prompt, parse_special: true})})).json() as {tokens: number[]};
          return {text: applied.prompt, tokens: tok.tokens.length};
        };
        const user = {role: "user", content: QUESTION};
        const [withCalls, without] = [await promptOf([user, turn(true)]), await promptOf([user, turn(false)])];
        assert.ok(withCalls.tokens > without.tokens, `the calls add tokens: ${withCalls.tokens} vs ${without.tokens}\n${withCalls.text}`);
        for (const call of calls) assert.ok(withCalls.text.includes(call.function.name), `${call.function.name} shows:\n${withCalls.text}`);
        assert.ok(withCalls.text.includes("Paris"), `the arguments show:\n${withCalls.text}`);
        if (c.callsWrittenBySvc) {
          // The template shows no calls, so svc writes them (src/pipeline/past-calls.ts): exactly as the model wrote them,
          // so a follow-up's prompt repeats the reply where the call is.
          const results = calls.map((call) => ({role: "tool", tool_call_id: call.id, content: `${call.function.name}: done`}));
          const followUp = await promptOf([user, turn(true), ...results]);
          assert.ok(followUp.text.includes(render(c.syntax, c.calls)), `the calls as written:\n${render(c.syntax, c.calls)}\nin\n${followUp.text}`);
          if (c.reasoning === null && c.text === null) {
            // A reply of nothing but calls comes back as the model's own tokens (a scripted model's are never the
            // tokenizer's), so the follow-up resumes from the kept state past the calls: all but the reply's last
            // token, the end of turn the template writes itself.
            const next = await server.client.chat.completions.create({model: "m", temperature: 0, max_tokens: 2, tools: chatTools(tools(false)),
              messages: [user, turn(true), ...results] as OpenAI.Chat.Completions.ChatCompletionMessageParam[]});
            const cacheN = (next as unknown as {timings: {cache_n: number}}).timings.cache_n;
            const through = first.usage!.prompt_tokens + first.usage!.completion_tokens - 1;
            assert.ok(cacheN >= through, `resumed at ${cacheN}, the calls end at ${through}`);
          }
        }
      });

      test("strict tools: a parameter the schema does not declare does not get through", async () => {
        const res = await server.client.chat.completions.create(chat(tools(true, false)));
        const read = readChat(res);
        for (const call of read.calls) assert.ok(!("days" in (call.args as object)), `no undeclared parameter: ${JSON.stringify(call)}`);
        for (const text of read.texts) assert.ok(!text.includes("days"), `not in the text either: ${JSON.stringify(text)}`);
      });
    });
  }
});
}
