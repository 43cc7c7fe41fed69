// Side models across the server (issue 7), with the one side model every build serves (nx3.5-2b, here on the
// test model: nothing below judges its answers): the /health and /v1/models listings, a side id refused on the
// other generation routes naming the chat route, the main model answering beside it, a server without
// SVC_NPU_MODELS behaving as if there were no side models, an unknown id stopping the start, and the queue
// refusing what cannot start in time.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {get, post, startServer, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";
import {testModelPath} from "../../support/test-model.ts";

const SIDE = "nx3.5-2b";
const MAIN = "svc-nx3.8-flash-next";
let side: RunningServer;
let plain: RunningServer;

before(async () => {
  // A tiny SVC_QUEUE_TIMEOUT for the overflow test; every other test sends one request at a time.
  [side, plain] = await Promise.all([
    startServer({SVC_NPU_MODELS: `${SIDE}=${await testModelPath()}`, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "0.1"}),
    sharedServer({SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"}),
  ]);
});
after(async () => {
  await Promise.all([side?.stop(), plain?.stop()]);
});

const ask = (content: string) => [{role: "user" as const, content}];

describe("side models listed", () => {
  test("/health lists side_models with the model, its kind and its route", async () => {
    const health = (await get(`${side.url}/health`)).body;
    const models = health.side_models.models as {id: string; kind: string; route: string}[];
    assert.deepEqual(models.map((m) => [m.id, m.kind, m.route]), [[SIDE, "small-generation", "POST /v1/chat/completions"]]);
    for (const key of ["queued", "waiting_in_server", "longest_wait_s", "passes", "refused_busy"]) assert.ok(key in health.side_models, key);
  });

  test("/v1/models lists the side id next to the main id (also through the openai client)", async () => {
    const ids = (await get(`${side.url}/v1/models`)).body.data.map((m: {id: string}) => m.id);
    assert.deepEqual(ids, [MAIN, SIDE]);
    const listed: string[] = [];
    for await (const m of side.client.models.list()) listed.push(m.id);
    assert.deepEqual(listed, [MAIN, SIDE]);
  });
});

describe("a side id on the other generation routes", () => {
  const routeRule = new RegExp(`^model: ${SIDE.replace(/\./g, "\\.")} is a small-generation model; send it to POST /v1/chat/completions$`);

  test("/v1/completions refuses it with 400 naming the chat route", async () => {
    const res = await post(`${side.url}/v1/completions`, {model: SIDE, prompt: "Hello", max_tokens: 4});
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "invalid_request_error");
    assert.equal(res.body.error.param, "model");
    assert.match(res.body.error.message, routeRule);
  });

  test("/v1/responses refuses it with 400 naming the chat route", async () => {
    const res = await post(`${side.url}/v1/responses`, {model: SIDE, input: "Hello", max_output_tokens: 16});
    assert.equal(res.status, 400);
    assert.equal(res.body.error.type, "invalid_request_error");
    assert.match(res.body.error.message, routeRule);
  });

  test("/v1/messages refuses it with 400 in Anthropic's error shape, naming the chat route", async () => {
    const res = await post(`${side.url}/v1/messages`, {model: SIDE, max_tokens: 4, messages: [{role: "user", content: "Hello"}]});
    assert.equal(res.status, 400);
    assert.equal(res.body.type, "error");
    assert.equal(res.body.error.type, "invalid_request_error");
    assert.match(res.body.error.message, /is a small-generation model; send it to POST \/v1\/chat\/completions/);
  });
});

describe("the main model beside the side model", () => {
  test("answers chat, completions and messages as usual, under its own id", async () => {
    const chat = await side.client.chat.completions.create({model: MAIN, messages: ask("Say hello."), max_tokens: 8, temperature: 0});
    assert.equal(chat.model, MAIN);
    assert.ok(chat.choices[0]!.message.content!.length > 0);
    const other = await side.client.chat.completions.create({model: "any-other-name", messages: ask("Say hello."), max_tokens: 8, temperature: 0});
    assert.equal(other.model, MAIN, "a name that is no side id goes to the main model");
    assert.equal(other.choices[0]!.message.content, chat.choices[0]!.message.content);
    const completion = await side.client.completions.create({model: MAIN, prompt: "The sky is", max_tokens: 4, temperature: 0});
    assert.equal(completion.model, MAIN);
    assert.ok(completion.choices[0]!.text.length > 0);
    const msg = await post(`${side.url}/v1/messages`, {model: MAIN, max_tokens: 4, messages: [{role: "user", content: "Hello"}]});
    assert.equal(msg.status, 200, msg.text);
    // The side model answers in between, and the main model after it, unchanged (greedy).
    const small = await side.client.chat.completions.create({model: SIDE, messages: ask("Say hello."), max_tokens: 8});
    assert.equal(small.model, SIDE);
    const again = await side.client.chat.completions.create({model: MAIN, messages: ask("Say hello."), max_tokens: 8, temperature: 0});
    assert.equal(again.choices[0]!.message.content, chat.choices[0]!.message.content);
  });
});

describe("a server without SVC_NPU_MODELS", () => {
  test("answers 404 on the side routes and lists no side models", async () => {
    for (const path of ["/v1/embeddings", "/v1/rerank", "/v1/decide", "/v1/moderations", "/classify"]) {
      const res = await post(`${plain.url}${path}`, {model: "nx3-embedding-0.6b", input: "hello"});
      assert.equal(res.status, 404, `${path}: ${res.text}`);
    }
    const health = (await get(`${plain.url}/health`)).body;
    assert.equal("side_models" in health, false);
    const ids = (await get(`${plain.url}/v1/models`)).body.data.map((m: {id: string}) => m.id);
    assert.deepEqual(ids, [MAIN]);
  });

  test("a side id there is just a name: the main model answers it", async () => {
    const res = await plain.client.chat.completions.create({model: SIDE, messages: ask("Hi"), max_tokens: 4});
    assert.equal(res.model, MAIN);
  });
});

describe("SVC_NPU_MODELS with an unknown id", () => {
  test("stops the start with a line naming the known ids, exit code non-zero", async () => {
    const err = await startServer({SVC_NPU_MODELS: "not-a-model", SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"}, 60_000).then(
      async (s) => {
        await s.stop();
        assert.fail("the server started");
      }, (e: Error) => e);
    const code = /server exited with code (\S+) before listening/.exec(err.message);
    assert.ok(code, err.message);
    assert.notEqual(code[1], "0");
    assert.notEqual(code[1], "null", "it exited by itself, not killed");
    const line = err.message.split("\n").find((l) => l.includes("not-a-model"));
    assert.ok(line, err.message);
    for (const id of ["decider-0.8b", "nx3-embedding-0.6b", "nx3-reranker-0.6b", "nx3guard-gen-0.6b", "nx3guard-stream-0.6b", SIDE]) {
      assert.ok(line.includes(id), `the line names ${id}: ${line}`);
    }
  });
});

describe("queue overflow", () => {
  test("requests that cannot start within SVC_QUEUE_TIMEOUT get 503 engine_busy with Retry-After; the others are served", async () => {
    // A long prompt and a long reply (the test model never ends one on its own: it runs to max_tokens) keep the
    // first request on the small model well past 0.1 s while the others wait.
    const content = `Summarise this: ${"The quick brown fox jumps over the lazy dog. ".repeat(60)}`;
    const body = {model: SIDE, messages: ask(content), max_tokens: 512, temperature: 0};
    const results = await Promise.all(Array.from({length: 4}, () => post(`${side.url}/v1/chat/completions`, body)));
    const busy = results.filter((r) => r.status === 503);
    const served = results.filter((r) => r.status === 200);
    assert.equal(busy.length + served.length, results.length, results.map((r) => `${r.status} ${r.text.slice(0, 200)}`).join("\n"));
    assert.ok(busy.length >= 1, "at least one request could not start in time");
    assert.ok(served.length >= 1, "the one that started is served");
    for (const r of busy) {
      assert.equal(r.body.error.code, "engine_busy");
      assert.equal(r.body.error.type, "server_error");
      assert.match(r.body.error.message, /nx3\.5-2b is answering another request.*SVC_QUEUE_TIMEOUT/);
      assert.equal(r.headers.get("retry-after"), "1");
    }
    for (const r of served) {
      assert.equal(r.body.model, SIDE);
      assert.ok(r.body.usage.completion_tokens >= 1);
    }
    // The server answers the next request.
    const next = await post(`${side.url}/v1/chat/completions`, {model: SIDE, messages: ask("Hi"), max_tokens: 4});
    assert.equal(next.status, 200, next.text);
    const health = (await get(`${side.url}/health`)).body;
    assert.equal(health.side_models.queued, 0);
    assert.equal(health.side_models.running, false);
  });
});
