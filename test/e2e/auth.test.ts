// API-key auth: with SVC_API_KEY every route but GET /health needs the key, as Bearer or x-api-key.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {get, post, startServer, type RunningServer} from "./harness.ts";

const KEY = "sk-test-0123456789";
let server: RunningServer;

before(async () => {
  server = await startServer({SVC_API_KEY: KEY, SVC_PARALLEL: "1"});
});
after(async () => {
  await server?.stop();
});

const body = {messages: [{role: "user", content: "Hi"}], max_tokens: 2};

describe("API key", () => {
  test("GET /health is open", async () => {
    assert.equal((await get(`${server.url}/health`)).status, 200);
  });

  test("every other route answers 401 without the key", async () => {
    for (const [method, path] of [["POST", "/v1/chat/completions"], ["POST", "/v1/completions"], ["GET", "/v1/models"], ["GET", "/props"],
      ["GET", "/slots"], ["POST", "/tokenize"], ["POST", "/detokenize"], ["POST", "/no/such/route"]] as const) {
      const res = method === "GET" ? await get(`${server.url}${path}`) : await post(`${server.url}${path}`, body);
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.equal(res.body.error.type, "authentication_error");
      assert.match(res.body.error.message, /Authorization: Bearer <key> or x-api-key/);
    }
  });

  test("a wrong key is 401", async () => {
    const res = await post(`${server.url}/v1/chat/completions`, body, {authorization: "Bearer sk-wrong"});
    assert.equal(res.status, 401);
    assert.match(res.body.error.message, /not valid/);
  });

  test("the key is accepted as Bearer and as x-api-key", async () => {
    assert.equal((await post(`${server.url}/v1/chat/completions`, body, {authorization: `Bearer ${KEY}`})).status, 200);
    assert.equal((await post(`${server.url}/v1/chat/completions`, body, {"x-api-key": KEY})).status, 200);
    assert.equal((await get(`${server.url}/slots`, {"x-api-key": KEY})).status, 200);
  });

  test("the openai client with the key works; without it the SDK raises AuthenticationError", async () => {
    const ok = await server.client.chat.completions.create({model: "m", ...body} as never);
    assert.equal((ok as {object: string}).object, "chat.completion");
    const bad = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "nope", maxRetries: 0});
    await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
  });
});
