// API-key auth: with SVC_API_KEY every route but GET /health and the playground page (GET /, /playground/*)
// needs the key, as Bearer or x-api-key; the Messages-style routes answer 401 in Anthropic's shape.
// In-process over the engine double.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type {MessageCreateParamsNonStreaming, MessageParam} from "@anthropic-ai/sdk/resources/messages";
import OpenAI from "openai";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

const KEY = "sk-test-0123456789";
let server: InProcessApp;

before(async () => {
  server = await startInProcessApp({env: {SVC_API_KEY: KEY, SVC_PARALLEL: "1"}});
});
after(async () => {
  await server?.close();
});

const body = {messages: [{role: "user", content: "Hi"}], max_tokens: 2};

describe("API key", () => {
  test("GET /health is open", async () => {
    assert.equal((await server.get("/health")).status, 200);
  });

  test("the playground page and its assets are open; POST / and unknown assets are not served to the keyless", async () => {
    for (const path of ["/", "/playground/app.js", "/playground/vendor/preact.mjs"]) assert.equal((await server.get(path)).status, 200, path);
    assert.equal((await server.get("/playground/no-such.js")).status, 404);
    assert.equal((await server.post("/", body)).status, 401);
  });

  test("every other route answers 401 without the key", async () => {
    for (const [method, path] of [["POST", "/v1/chat/completions"], ["POST", "/v1/completions"], ["GET", "/v1/models"], ["GET", "/props"],
      ["GET", "/slots"], ["POST", "/tokenize"], ["POST", "/detokenize"], ["POST", "/no/such/route"]] as const) {
      const res = method === "GET" ? await server.get(path) : await server.post(path, body);
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(res.body.error.type, "authentication_error");
      assert.match(res.body.error.message, /Authorization: Bearer <key> or x-api-key/);
    }
  });

  test("a wrong key is 401", async () => {
    const res = await server.post("/v1/chat/completions", body, {authorization: "Bearer sk-wrong"});
    assert.equal(res.status, 401);
    assert.match(res.body.error.message, /not valid/);
  });

  test("the key is accepted as Bearer and as x-api-key", async () => {
    assert.equal((await server.post("/v1/chat/completions", body, {authorization: `Bearer ${KEY}`})).status, 200);
    assert.equal((await server.post("/v1/chat/completions", body, {"x-api-key": KEY})).status, 200);
    assert.equal((await server.get("/slots", {"x-api-key": KEY})).status, 200);
  });

  test("the openai client with the key works; without it the SDK raises AuthenticationError", async () => {
    const url = await server.listen();
    const client = new OpenAI({baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0});
    const ok = await client.chat.completions.create({model: "m", ...body} as never);
    assert.equal((ok as {object: string}).object, "chat.completion");
    const bad = new OpenAI({baseURL: `${url}/v1`, apiKey: "nope", maxRetries: 0});
    await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
  });
});

// Moved from e2e/messages.test.ts (where it ran on the scripted thinking model behind a key): the request is
// the same, with thinking, tools and all; none of it is read before the key check.
describe("API key on the Messages-style route", () => {
  const tool = {name: "get_weather", input_schema: {type: "object" as const, properties: {city: {type: "string"}}, required: ["city"]}};
  const first: MessageParam[] = [{role: "user", content: "Weather in Paris?"}];
  const params = (extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming =>
    ({model: "m", max_tokens: 120, temperature: 0, thinking: {type: "enabled", budget_tokens: 60}, tools: [tool], messages: first, ...extra}) as MessageCreateParamsNonStreaming;

  test("with an API key set: 401 in Anthropic's shape without it; x-api-key and Bearer both accepted", async () => {
    const url = await server.listen();
    const r = await server.post("/v1/messages", params());
    assert.equal(r.status, 401);
    assert.equal(r.body.type, "error");
    assert.equal(r.body.error.type, "authentication_error");
    const wrong = await new Anthropic({baseURL: url, apiKey: "wrong", maxRetries: 0}).messages.countTokens({model: "m", messages: first}).catch((e: unknown) => e);
    assert.ok(wrong instanceof Anthropic.AuthenticationError);
    assert.equal((wrong.error as {error: {type: string}}).error.type, "authentication_error");
    const bearer = new Anthropic({baseURL: url, apiKey: null, authToken: KEY, maxRetries: 0});
    assert.ok((await bearer.messages.countTokens({model: "m", messages: first})).input_tokens > 0);
    // In e2e the other tests of that server used the key as x-api-key; here it is checked directly.
    const withKey = new Anthropic({baseURL: url, apiKey: KEY, maxRetries: 0});
    assert.ok((await withKey.messages.countTokens({model: "m", messages: first})).input_tokens > 0);
  });
});
