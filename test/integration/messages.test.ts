// The Messages-style route in-process over the engine double, through the official Anthropic client (on a
// real listener): create, stream().finalMessage() (the SDK's own judge of the event stream) and countTokens
// agree, event names and order; the ?beta=true and unprefixed aliases and what they log; refusals in
// Anthropic's error shape. Moved from e2e/messages.test.ts: tool calls, structured output, stop sequences,
// the cap, the prompt cache and thinking stay there, on real and scripted models.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type {MessageCreateParamsNonStreaming} from "@anthropic-ai/sdk/resources/messages";
import {post, TIMING_FIELDS} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

const CAP = 48;

/** Raw SSE frames: each frame's event name and parsed data. */
async function frames(url: string, body: object, headers: Record<string, string> = {}): Promise<{event: string | null; data: any}[]> {
  const res = await fetch(url, {method: "POST", headers: {"content-type": "application/json", ...headers}, body: JSON.stringify({...body, stream: true})});
  assert.equal(res.status, 200);
  return (await res.text()).split("\n\n").filter((b) => b.includes("data: ")).map((b) => ({
    event: /^event: (.*)$/m.exec(b)?.[1] ?? null,
    data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!),
  }));
}

describe("messages on the engine double", () => {
  let server: InProcessApp;
  let url: string;
  let anthropic: Anthropic;
  before(async () => {
    server = await startInProcessApp({env: {SVC_PARALLEL: "2", SVC_MAX_TOKENS_CAP: String(CAP)}, captureLogs: true,
      script: () => "À Paris."}); // 9 tokens: ends its turn within the 12-token budget, with a character split across two tokens
    url = await server.listen();
    anthropic = new Anthropic({baseURL: url, apiKey: "x", maxRetries: 0});
  });
  after(async () => {
    await server?.close();
  });

  const ask = (content: string, extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming =>
    // temperature is not in this SDK's types any more; the server still reads it.
    ({model: "claude-any", max_tokens: 12, temperature: 0, messages: [{role: "user", content}], ...extra}) as MessageCreateParamsNonStreaming;

  test("create, stream().finalMessage() and countTokens agree; usage, timings, event names and order", async () => {
    const params = ask("What is the capital of France?", {system: "Answer briefly."});
    const {data: plain, response} = await anthropic.messages.create(params).withResponse();
    assert.match(plain.id, /^msg_/);
    assert.equal(response.headers.get("request-id"), plain.id);
    assert.equal(plain.model, "svc-nx3.8-flash-next");
    assert.equal(plain.type, "message");
    assert.equal(plain.content[0]?.type, "text");
    assert.ok(["end_turn", "max_tokens"].includes(plain.stop_reason!));
    assert.ok(plain.usage.output_tokens >= 1 && plain.usage.output_tokens <= 12);
    assert.equal(plain.usage.cache_creation_input_tokens, 0);
    const timings = (plain as unknown as {timings: Record<string, number>}).timings;
    assert.deepEqual(Object.keys(timings).sort(), [...TIMING_FIELDS].sort());
    assert.equal(timings.prompt_n, plain.usage.input_tokens + plain.usage.cache_read_input_tokens!);
    assert.equal(timings.predicted_n, plain.usage.output_tokens);

    const final = await anthropic.messages.stream(params).finalMessage();
    assert.deepEqual(final.content, plain.content);
    assert.equal(final.stop_reason, plain.stop_reason);
    assert.equal(final.usage.output_tokens, plain.usage.output_tokens);

    const {input_tokens: counted} = await anthropic.messages.countTokens({model: "m", system: params.system, messages: params.messages});
    assert.equal(counted, plain.usage.input_tokens + plain.usage.cache_read_input_tokens!);
    assert.equal(counted, final.usage.input_tokens + final.usage.cache_read_input_tokens!);

    const raw = await frames(`${url}/v1/messages`, params);
    assert.ok(raw.every((f) => f.event === f.data.type), "every frame has an event line naming its type");
    assert.deepEqual(raw.slice(0, 3).map((f) => f.event), ["message_start", "content_block_start", "ping"]);
    assert.deepEqual(raw.slice(-3).map((f) => f.event), ["content_block_stop", "message_delta", "message_stop"]);
    const start = raw[0]!.data.message;
    assert.equal(start.usage.input_tokens + start.usage.cache_read_input_tokens, counted);
    const delta = raw.at(-2)!.data;
    assert.equal(delta.usage.output_tokens, plain.usage.output_tokens);
    assert.equal(delta.usage.input_tokens + delta.usage.cache_read_input_tokens, counted);
    assert.deepEqual(Object.keys(delta.timings).sort(), [...TIMING_FIELDS].sort());
  });

  test("?beta=true and the unprefixed aliases; unused fields and vendor server tools named once in the log", async () => {
    const beta = await anthropic.beta.messages.create({...ask("Hi", {max_tokens: 1})} as Anthropic.Beta.MessageCreateParamsNonStreaming);
    assert.equal(beta.type, "message");
    const extras = {context_management: {edits: []}, mcp_servers: [], service_tier: "auto",
      tools: [{type: "web_search_20250305", name: "web_search"}, {name: "lookup", input_schema: {type: "object", properties: {q: {type: "string"}}}}]};
    for (const path of ["/v1/messages?beta=true", "/messages"]) {
      const r = await post(`${url}${path}`, {...ask("Hi", {max_tokens: 1}), ...extras}, {"anthropic-version": "2023-06-01", "anthropic-beta": "x"});
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.type, "message");
    }
    const counted = await post(`${url}/messages/count_tokens?beta=true`, {model: "m", messages: [{role: "user", content: "Hi"}]});
    assert.deepEqual(Object.keys(counted.body), ["input_tokens"]);
    const once = (re: RegExp) => server.logs.filter((l) => re.test(l)).length;
    assert.equal(once(/fields accepted but not used fields=context_management,mcp_servers,service_tier/), 1);
    assert.equal(once(/server tools of the vendor dropped .*types=web_search_20250305/), 1);
  });

  describe("refusals: 400 in Anthropic's shape, naming the field", () => {
    test("the SDK raises BadRequestError with the error type", async () => {
      const err = await anthropic.messages.create(ask("", {messages: [{role: "user", content: [{type: "search_result"} as never]}]})).catch((e: unknown) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      assert.equal(err.status, 400);
      const body = err.error as {type: string; error: {type: string; message: string}};
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, /messages\[0\]\.content\[0\]\.type/);
    });

    const user = (content: unknown) => ({role: "user", content});
    const toolUse = {type: "tool_use", id: "toolu_1", name: "get_weather", input: {city: "Oslo"}};
    const cases: [string, object, string, RegExp][] = [
      ["unknown block type", {messages: [user([{type: "citation_blob", text: "x"}])]}, "messages[0].content[0].type", /citation_blob/],
      ["tool_result in an assistant message", {messages: [user("Hi"), {role: "assistant", content: [{type: "tool_result", tool_use_id: "toolu_1"}]}]},
        "messages[1].content[0]", /wrong place/],
      ["tool_result answering no tool_use of the turn before", {messages: [user("Hi"), {role: "assistant", content: [toolUse]}, user("?"),
        user([{type: "tool_result", tool_use_id: "toolu_1", content: "sunny"}])]}, "messages[3].content[0].tool_use_id", /wrong place/],
      ["budget_tokens not below max_tokens", {max_tokens: 8, thinking: {type: "enabled", budget_tokens: 8}, messages: [user("Hi")]}, "thinking.budget_tokens", /less than max_tokens/],
      ["a signature in this server's form that does not check out", {messages: [user("Hi"), {role: "assistant", content: [{type: "thinking", thinking: "hm", signature: "svc1.aG0.0123456789abcdef"}]}, user("?")]},
        "messages[1].content[0].signature", /malformed or was altered/],
      ["a PDF document", {messages: [user([{type: "document", source: {type: "base64", media_type: "application/pdf", data: "JVBERi0="}}])]}, "messages[0].content[0]", /document/],
      ["an image", {messages: [user([{type: "image", source: {type: "base64", media_type: "image/png", data: "iVBORw0KGgo="}}])]}, "messages[0].content[0]", /vision/],
      ["max_tokens missing", {max_tokens: undefined, messages: [user("Hi")]}, "max_tokens", /required/],
    ];
    for (const [what, body, field, re] of cases) {
      test(what, async () => {
        const r = await server.post("/v1/messages", {model: "m", max_tokens: 4, ...body});
        assert.equal(r.status, 400, r.text);
        assert.deepEqual(Object.keys(r.body).sort(), ["error", "request_id", "type"]);
        assert.equal(r.body.type, "error");
        assert.equal(r.body.error.type, "invalid_request_error");
        assert.ok(r.body.error.message.includes(field), `${r.body.error.message} names ${field}`);
        assert.match(r.body.error.message, re);
      });
    }

    test("unparsable JSON and an unknown path under /v1/messages answer in the same shape", async () => {
      const bad = await server.post("/v1/messages?beta=true", "{not json");
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.type, "invalid_request_error");
      const missing = await server.post("/v1/messages/batches", {});
      assert.equal(missing.status, 404);
      assert.equal(missing.body.type, "error");
      assert.equal(missing.body.error.type, "not_found_error");
    });
  });
});
