// Error bodies in each dialect's own conventions (issue 18), in-process over the engine double with a small
// context (512) so an overflow is cheap to reach, and through the official SDKs on a real listener:
// - Messages: an overflow is Anthropic's exact body, `prompt is too long: N tokens > M maximum` (what Claude
//   Code matches to compact and retry), and every error body under /v1/messages carries the request-id
//   header's id as request_id, whatever failed (decode, overflow, 401, 404, 413, bad JSON, count_tokens, a
//   failure mid-stream);
// - chat and Responses: an overflow has code context_length_exceeded, streamed or not (it is found before the
//   stream starts, so it is a JSON 400), and `param` names the dialect's own field: `messages` on chat,
//   `input` on Responses (never chat's names), `prompt` on completions.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import {readSse} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp, type TestResponse} from "../doubles/app.ts";
import type {Script} from "../doubles/engine-double.ts";

const CTX = 512;
const KEY = "sk-test-errors";
/** Over 512 tokens in any dialect (the double's tokens are bytes). */
const LONG = "word ".repeat(200);
/** Claude Code's reading of an overflow: both numbers, so it knows how much to drop. */
const ANTHROPIC_OVERFLOW = /^prompt is too long: (\d+) tokens > (\d+) maximum$/;

/** "fail midway" makes the engine fail after a few tokens have gone out (a rejected wait is an engine error). */
const script: Script = (prompt) => {
  if (!/fail midway/.test(prompt.text)) return "OK.";
  const failure = new Promise((_, reject) => setTimeout(() => reject(new Error("the engine failed")), 50));
  failure.catch(() => {}); // handled by the double when it reaches the step, however late that is
  return [{text: "Hello "}, {text: "world", wait: failure}];
};

let server: InProcessApp;
let url: string;
const auth = {"x-api-key": KEY};

before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "1", SVC_CTX_SIZE: String(CTX), SVC_API_KEY: KEY, SVC_BODY_LIMIT_MB: "0.05"}, script});
  url = await server.listen();
});
after(async () => {
  await server?.close();
});

/** An Anthropic-shaped error: exactly type, error and request_id, the latter the request-id header's. */
function anthropicError(res: TestResponse, status: number, type: string): {message: string; requestId: string} {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(Object.keys(res.body).sort(), ["error", "request_id", "type"]);
  assert.equal(res.body.type, "error");
  assert.deepEqual(Object.keys(res.body.error).sort(), ["message", "type"]);
  assert.equal(res.body.error.type, type);
  const header = res.headers.get("request-id");
  assert.ok(header, "a request-id header");
  assert.equal(res.body.request_id, header);
  return {message: res.body.error.message, requestId: header};
}

describe("Messages: Anthropic's overflow wording and request_id", () => {
  const overflowing = {model: "claude-any", max_tokens: 16, messages: [{role: "user", content: LONG}]};

  test("an overflow is exactly Anthropic's body, streamed or not; N is what count_tokens counts, M the longest prompt that fits", async () => {
    const counted = await server.post("/v1/messages/count_tokens", {model: "m", messages: overflowing.messages}, auth);
    assert.equal(counted.status, 200, "count_tokens counts a prompt longer than the context rather than refusing it");
    const n = counted.body.input_tokens as number;
    assert.ok(n >= CTX, `${n} tokens overflow ${CTX}`);
    assert.match(counted.headers.get("request-id") ?? "", /^count_/);
    for (const stream of [false, true]) {
      const res = await server.post("/v1/messages", {...overflowing, stream}, auth);
      const {requestId} = anthropicError(res, 400, "invalid_request_error");
      assert.deepEqual(res.body, {type: "error", error: {type: "invalid_request_error", message: `prompt is too long: ${n} tokens > ${CTX - 1} maximum`},
        request_id: requestId});
      assert.match(requestId, /^msg_/);
      const [, tokens, maximum] = ANTHROPIC_OVERFLOW.exec(res.body.error.message)!;
      assert.ok(Number(tokens) > Number(maximum));
    }
  });

  test("through @anthropic-ai/sdk: BadRequestError whose error is the body and whose requestID is its request_id", async () => {
    const anthropic = new Anthropic({baseURL: url, apiKey: KEY, maxRetries: 0});
    for (const call of [() => anthropic.messages.create(overflowing as Anthropic.MessageCreateParamsNonStreaming),
      () => anthropic.messages.stream(overflowing as Anthropic.MessageCreateParamsNonStreaming).finalMessage()]) {
      const err = await call().catch((e: unknown) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      const body = err.error as {type: string; error: {type: string; message: string}; request_id: string};
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, ANTHROPIC_OVERFLOW);
      assert.ok(err.requestID);
      assert.equal(body.request_id, err.requestID);
      assert.match(err.message, /^400 .*prompt is too long: \d+ tokens > 511 maximum/);
    }
  });

  test("every other error under /v1/messages carries the header's id too", async () => {
    // A refusal in decode: the message names the field.
    const decode = anthropicError(await server.post("/v1/messages", {model: "m", messages: [{role: "user", content: "Hi"}]}, auth), 400, "invalid_request_error");
    assert.match(decode.message, /^max_tokens: /);
    // Before any handler runs: no key, unparsable JSON, a body over the limit, an unknown path.
    anthropicError(await server.post("/v1/messages", overflowing), 401, "authentication_error");
    anthropicError(await server.post("/v1/messages?beta=true", "{not json", auth), 400, "invalid_request_error");
    anthropicError(await server.post("/v1/messages", {...overflowing, messages: [{role: "user", content: "x".repeat(60_000)}]}, auth), 413, "request_too_large");
    anthropicError(await server.post("/v1/messages/batches", {}, auth), 404, "not_found_error");
    anthropicError(await server.post("/messages", {model: "m"}, auth), 400, "invalid_request_error");
    // count_tokens: its own id on the header, repeated in the body.
    const count = anthropicError(await server.post("/v1/messages/count_tokens", {model: "m", messages: []}, auth), 400, "invalid_request_error");
    assert.match(count.requestId, /^count_/);
    // A schema the pipeline refuses is refused when counted too, naming the Messages field.
    const schema = anthropicError(await server.post("/v1/messages/count_tokens", {model: "m", messages: [{role: "user", content: "Hi"}],
      output_config: {format: {type: "json_schema", schema: {type: "string", pattern: "a+"}}}}, auth), 400, "invalid_request_error");
    assert.match(schema.message, /^output_config\.format\.schema: .*pattern/);
    // Ids are per request.
    const again = anthropicError(await server.post("/v1/messages", {model: "m", messages: [{role: "user", content: "Hi"}]}, auth), 400, "invalid_request_error");
    assert.notEqual(again.requestId, decode.requestId);
  });

  test("a failure after the stream started: the error event carries the request's id", async () => {
    const res = await fetch(`${url}/v1/messages`, {method: "POST", headers: {"content-type": "application/json", ...auth},
      body: JSON.stringify({model: "m", max_tokens: 32, stream: true, messages: [{role: "user", content: "fail midway"}]})});
    assert.equal(res.status, 200);
    const requestId = res.headers.get("request-id");
    const {raw, data} = await readSse(res);
    assert.match(raw, /^event: error$/m);
    const error = data.at(-1);
    assert.equal(error.type, "error");
    assert.equal(error.error.type, "api_error");
    assert.equal(error.request_id, requestId);
    assert.equal(data[0].message.id, requestId);
  });
});

describe("chat and Responses: context_length_exceeded, and param in the dialect's own names", () => {
  const openaiError = (res: TestResponse, param: string | null, code: string | null) => {
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(Object.keys(res.body.error).sort(), ["code", "message", "param", "type"]);
    assert.equal(res.body.error.type, "invalid_request_error");
    assert.equal(res.body.error.param, param);
    assert.equal(res.body.error.code, code);
  };

  test("an overflow, streamed or not, is a JSON 400 with code context_length_exceeded naming messages / input / prompt", async () => {
    for (const stream of [false, true]) {
      const chat = await server.post("/v1/chat/completions", {messages: [{role: "user", content: LONG}], stream}, auth);
      openaiError(chat, "messages", "context_length_exceeded");
      // OpenAI's own wording, which clients match to tell an overflow from other 400s.
      assert.match(chat.body.error.message, /^This model's maximum context length is 512 tokens\. However, your messages resulted in \d+ tokens/);
      assert.match(chat.headers.get("content-type") ?? "", /^application\/json/);
      const responses = await server.post("/v1/responses", {input: LONG, stream}, auth);
      openaiError(responses, "input", "context_length_exceeded");
      assert.match(responses.body.error.message, /^This model's maximum context length is 512 tokens\. However, your input resulted in \d+ tokens/);
      assert.match(responses.headers.get("content-type") ?? "", /^application\/json/);
      // Instructions count against the same context; the field is still input, the conversation they fold into.
      openaiError(await server.post("/v1/responses", {instructions: LONG, input: "Hi", stream}, auth), "input", "context_length_exceeded");
      openaiError(await server.post("/v1/completions", {prompt: LONG, stream}, auth), "prompt", "context_length_exceeded");
    }
  });

  test("Responses' input_tokens counts a prompt longer than the context", async () => {
    const res = await server.post("/v1/responses/input_tokens", {input: LONG}, auth);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.input_tokens >= CTX);
  });

  test("through the openai SDK: error.code and error.param, create and stream alike", async () => {
    const openai = new OpenAI({baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0});
    const cases: [string, () => Promise<unknown>][] = [
      ["messages", () => openai.chat.completions.create({model: "m", messages: [{role: "user", content: LONG}]})],
      ["messages", () => openai.chat.completions.create({model: "m", messages: [{role: "user", content: LONG}], stream: true})],
      ["input", () => openai.responses.create({model: "m", input: LONG})],
      ["input", () => openai.responses.create({model: "m", input: LONG, stream: true})],
      ["input", () => openai.responses.stream({model: "m", input: LONG}).finalResponse()],
    ];
    for (const [param, call] of cases) {
      const err = await call().catch((e: unknown) => e);
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.equal(err.code, "context_length_exceeded");
      assert.equal(err.param, param);
      assert.equal(err.type, "invalid_request_error");
    }
  });

  test("Responses refusals name Responses fields, never chat's messages / max_tokens / response_format", async () => {
    const cases: [object, string][] = [
      [{input: LONG}, "input"],
      [{input: "Hi", max_output_tokens: 10_000_000}, "max_output_tokens"],
      [{input: "Hi", instructions: 5}, "instructions"],
      [{input: "Hi", text: {format: {type: "json_schema", name: "x", schema: {type: "string", format: "email"}}}}, "text.format.schema"],
      [{input: "Hi", tools: [{type: "function", name: "a b"}]}, "tools[0].name"],
      [{input: "Hi", tools: [{type: "function", name: "a"}], tool_choice: {type: "function", name: "b"}}, "tool_choice.name"],
    ];
    for (const [body, param] of cases) {
      const res = await server.post("/v1/responses", body, auth);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.param, param, JSON.stringify(body));
      assert.doesNotMatch(res.body.error.message, /\b(messages|max_tokens|response_format)\b/, JSON.stringify(body));
    }
  });
});
