// Bad input: every case gets a 4xx that names the field and the rule, never a 500, and the server keeps
// serving. In-process over the engine double; the context is small here (512) so the context-size edge is
// cheap to reach, and exact (the double's context is exactly SVC_CTX_SIZE).

import assert from "node:assert/strict";
import {after, afterEach, before, describe, test} from "node:test";
import OpenAI from "openai";
import {post as postOverSocket} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp, type TestResponse} from "../doubles/app.ts";

let server: InProcessApp;
const CTX = 512;

before(async () => {
  // A reply longer than any budget below, so only the budget ends it.
  server = await startInProcessApp({env: {SVC_PARALLEL: "2", SVC_CTX_SIZE: String(CTX), SVC_MAX_TOKENS_CAP: "1000", SVC_BODY_LIMIT_MB: "1"},
    script: () => ({steps: [{text: "Sure, here is a long answer. "}], end: "repeat"})});
});
after(async () => {
  await server?.close();
});
// After every refusal the server must still answer a normal request.
afterEach(async () => {
  const ok = await server.post("/v1/chat/completions", {messages: [{role: "user", content: "Hi"}], max_tokens: 1});
  assert.equal(ok.status, 200, `server still serves after the previous case: ${ok.text}`);
});

const chat = (body: unknown, headers?: Record<string, string>) => server.post("/v1/chat/completions", body, headers);
const user = [{role: "user", content: "Hello"}];

function refused(res: Pick<TestResponse, "status" | "body" | "text">, status: number, message: RegExp) {
  assert.equal(res.status, status, res.text);
  assert.equal(typeof res.body?.error?.message, "string", `error body shape: ${res.text}`);
  assert.equal(typeof res.body.error.type, "string");
  assert.match(res.body.error.message, message);
}

describe("bad input is refused with a clear 4xx", () => {
  test("malformed JSON", async () => refused(await chat("{\"messages\": [", {}), 400, /not valid JSON/));
  test("a body that is not an object", async () => refused(await chat("[1,2]"), 400, /must be a JSON object/));
  test("an empty body", async () => refused(await chat(""), 400, /must be a JSON object|empty/));
  test("non-UTF-8 bytes", async () => {
    const bytes = Buffer.concat([Buffer.from("{\"messages\":[{\"role\":\"user\",\"content\":\""), Buffer.from([0xff, 0xfe]), Buffer.from("\"}]}")]);
    refused(await chat(bytes), 400, /not valid UTF-8/);
  });
  test("a body of megabytes", async () => {
    // Over a real socket: the upload itself is what this case is about.
    const url = await server.listen();
    const big = JSON.stringify({messages: [{role: "user", content: "x".repeat(3 * 1024 * 1024)}]});
    // Several times: the 413 must arrive every time, never a reset while the client is still sending.
    for (let i = 0; i < 5; i++) refused(await postOverSocket(`${url}/v1/chat/completions`, big), 413, /^the request body has \d+ bytes; this server takes at most 1048576 \(SVC_BODY_LIMIT_MB\)/);
  });
  test("wrong types name the field", async () => {
    refused(await chat({messages: user, temperature: "hot"}), 400, /^temperature: must be a number/);
    refused(await chat({messages: "hello"}), 400, /^messages: must be an array/);
    refused(await chat({messages: [{role: "user", content: 5}]}), 400, /^messages\[0\]\.content/);
    refused(await chat({messages: user, stream: "yes"}), 400, /^stream: must be a boolean/);
  });
  test("out-of-range sampling values", async () => {
    refused(await chat({messages: user, temperature: 9}), 400, /^temperature: must be at most 2/);
    refused(await chat({messages: user, top_p: -0.1}), 400, /^top_p: must be at least 0/);
  });
  test("an unknown role", async () => refused(await chat({messages: [{role: "wizard", content: "hi"}]}), 400, /^messages\[0\]\.role: must be one of "system", "developer", "user", "assistant", "tool"/));
  test("missing and empty messages", async () => {
    refused(await chat({model: "m"}), 400, /^messages: is required \(an array\)/);
    refused(await chat({messages: []}), 400, /^messages: must have at least 1 item/);
  });
  test("negative, zero, fractional and huge budgets", async () => {
    refused(await chat({messages: user, max_tokens: -5}), 400, /^max_tokens: must be at least 1/);
    refused(await chat({messages: user, max_tokens: 0}), 400, /^max_tokens: must be at least 1/);
    refused(await chat({messages: user, max_completion_tokens: 2.5}), 400, /^max_completion_tokens: must be an integer/);
    refused(await chat({messages: user, max_tokens: 1001}), 400, /^max_tokens: 1001 is above this server's max_tokens_cap \(1000\)/);
    refused(await chat({messages: user, max_tokens: 1e30}), 400, /max_tokens/);
  });
  test("two budget names with different values; equal values are fine", async () => {
    refused(await chat({messages: user, max_tokens: 5, max_completion_tokens: 6}), 400, /max_tokens \(5\) and max_completion_tokens \(6\)/);
    refused(await chat({messages: user, max_output_tokens: 5, max_completion_tokens: 6}), 400, /max_completion_tokens \(6\) and max_output_tokens \(5\)/);
    const same = await chat({messages: user, max_tokens: 3, max_completion_tokens: 3, temperature: 0});
    assert.equal(same.status, 200);
    assert.ok(same.body.usage.completion_tokens <= 3);
  });
  test("a stop list too long, or with an empty string", async () => {
    refused(await chat({messages: user, stop: Array.from({length: 17}, (_, i) => `s${i}`)}), 400, /^stop/);
    refused(await chat({messages: user, stop: [""]}), 400, /^stop/);
  });
  test("an image content part without a vision tower", async () => {
    const messages = [{role: "user", content: [{type: "text", text: "What is this?"}, {type: "image_url", image_url: {url: "data:image/png;base64,AAAA"}}]}];
    refused(await chat({messages}), 400, /^messages\[0\]\.content\[1\]: an image was sent but this server has no vision/);
  });
  test("features of later builds, and logprobs outside the scoring rules, are refused, not ignored", async () => {
    refused(await chat({messages: user, response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "string", format: "email"}}}}), 400, /^response_format\.json_schema\.schema: .*"format"/);
    refused(await chat({messages: user, logprobs: true, temperature: 0}), 400, /^logprobs: at temperature 0 log probabilities are for scoring one token/);
    refused(await chat({messages: user, n: 2}), 400, /^n: only one choice/);
  });
  test("tools: a bad name, a duplicate, a choice naming no tool, a choice without tools", async () => {
    const f = (name: string) => ({type: "function", function: {name, parameters: {type: "object"}}});
    refused(await chat({messages: user, tools: [f("get weather")]}), 400, /^tools\[0\]\.function\.name: must be 1 to 64 letters/);
    refused(await chat({messages: user, tools: [f("a"), f("a")]}), 400, /^tools\[1\]\.function\.name: "a" names two tools/);
    refused(await chat({messages: user, tools: [f("a")], tool_choice: {type: "function", function: {name: "b"}}}), 400,
      /^tool_choice\.function\.name: "b" is not one of the request's tools/);
    refused(await chat({messages: user, tool_choice: "required"}), 400, /^tool_choice: needs tools/);
    refused(await chat({messages: user, tools: [{type: "function", function: {name: "a", parameters: []}}]}), 400, /^tools\[0\]\.function\.parameters: must be a JSON schema object/);
  });
  test("a prompt of exactly the context size is refused; one token less is served", async () => {
    const at = await server.post("/v1/completions", {prompt: Array(CTX).fill(28), max_tokens: 1});
    refused(at, 400, /^This model's maximum context length is 512 tokens\. However, your prompt resulted in 512 tokens, leaving no room for a reply/);
    assert.equal(at.body.error.code, "context_length_exceeded");
    const under = await server.post("/v1/completions", {prompt: Array(CTX - 1).fill(28), max_tokens: 50, temperature: 0});
    assert.equal(under.status, 200, under.text);
    assert.equal(under.body.usage.completion_tokens, 1, "a budget larger than the room runs until the region is full");
    assert.equal(under.body.choices[0].finish_reason, "length");
  });
  test("a long chat prompt over the context is refused, never shifted", async () => {
    refused(await chat({messages: [{role: "user", content: "word ".repeat(2000)}]}), 400, /maximum context length is 512 tokens\. However, your messages resulted in \d+ tokens/);
  });
  test("token ids outside the vocabulary", async () => {
    refused(await server.post("/v1/completions", {prompt: [1, 5_000_000]}), 400, /^prompt\[1\]: token id 5000000 is not in the vocabulary/);
  });
  test("an unknown route is 404 with the error body", async () => {
    refused(await server.post("/v1/nothing-here", {}), 404, /no route POST \/v1\/nothing-here/);
  });
  test("the SDK raises typed errors for refusals", async () => {
    const client = new OpenAI({baseURL: `${await server.listen()}/v1`, apiKey: "x", maxRetries: 0});
    await assert.rejects(client.chat.completions.create({model: "m", messages: [], max_tokens: 1}), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.equal(err.status, 400);
      return true;
    });
  });
});
