// The side models' long limits at their edges (slow: 4,096-token evaluations on a 2-core machine), moved
// from test/e2e/rerank-moderation.test.ts, which tests the rest of reranking and moderation. Both ids run the
// test model (SmolLM2's tokenizer at a fraction of the cost): the assertions are token counts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {longPost, post, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

let server: RunningServer;

before(async () => {
  const model = await testModelPath();
  server = await startServer({SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1800",
    SVC_NPU_MODELS: `nx3-reranker-0.6b=${model},nx3guard-gen-0.6b=${model}`});
});
after(async () => {
  await server?.stop();
});

const rerank = (body: Record<string, unknown>) => post(`${server.url}/v1/rerank`, {model: "nx3-reranker-0.6b", ...body});

describe("POST /v1/rerank", () => {
  test("a pair of 4,096 tokens is served; 4,097 is refused naming the document", {timeout: 1_800_000}, async () => {
    const doc = (words: number) => ["hello", ...Array(words - 1).fill(" hello")].join("");
    const probe = await rerank({query: "greeting", documents: [doc(1)]});
    const overhead = probe.body.usage.prompt_tokens - 1;
    const over = await rerank({query: "greeting", documents: ["short", doc(4097 - overhead)]});
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.error.message, /^documents\[1\]: .*takes 4097 tokens.*limit is 4096/);
    const edge = await longPost(`${server.url}/v1/rerank`, {model: "nx3-reranker-0.6b", query: "greeting", documents: [doc(4096 - overhead)]});
    assert.equal(edge.status, 200, edge.text);
    assert.equal(edge.body.usage.prompt_tokens, 4096);
  });
});

describe("POST /v1/moderations", () => {
  test("a prompt of 4,096 tokens is served; 4,097 is refused naming the input", {timeout: 1_800_000}, async () => {
    const text = (words: number) => ["hello", ...Array(words - 1).fill(" hello")].join("");
    const probe = await post(`${server.url}/v1/moderations`, {input: text(1)});
    const overhead = probe.body.usage.prompt_tokens - 1;
    const over = await post(`${server.url}/v1/moderations`, {input: ["hi", text(4097 - overhead)]});
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.error.message, /^input\[1\]: .*takes 4097 tokens.*limit is 4096/);
    const edge = await longPost(`${server.url}/v1/moderations`, {input: text(4096 - overhead)});
    assert.equal(edge.status, 200, edge.text);
    assert.equal(edge.body.usage.prompt_tokens, 4096);
  });
});
