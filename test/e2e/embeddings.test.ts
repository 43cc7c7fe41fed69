// POST /v1/embeddings on the real all-MiniLM-L6-v2 (converted from its HF folder at first start), through
// the official openai client and raw requests. Two servers: batching on (the default) and
// SVC_NPU_EMB_BATCH=0, so batched vectors are compared bit for bit with vectors computed alone and
// with batching off.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {get, post, startServer, type RunningServer} from "../../support/server.ts";

const MODEL = "nx3-embedding-0.6b";
const BASE = {SVC_NPU_MODELS: MODEL, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"};

let on: RunningServer;
let off: RunningServer;

before(async () => {
  on = await startServer(BASE);
  off = await startServer({...BASE, SVC_NPU_EMB_BATCH: "0"});
});
after(async () => {
  await on?.stop();
  await off?.stop();
});

const embed = async (server: RunningServer, body: Record<string, unknown>) => {
  const r = await post(`${server.url}/v1/embeddings`, {model: MODEL, ...body});
  assert.equal(r.status, 200, r.text);
  return r.body as {data: {index: number; embedding: number[] | string}[]; usage: {prompt_tokens: number; total_tokens: number}; model: string; object: string};
};
const dot = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));
const batchedPasses = async (server: RunningServer) => {
  const h = await get(`${server.url}/health`);
  return h.body.side_models.models.find((m: {id: string}) => m.id === MODEL).batched_passes as number;
};

const SHORT = ["The cat sleeps on the sofa.", "A dog runs in the park.", "Interest rates rose again this quarter.",
  "She plays the violin beautifully.", "The train to Paris was delayed.", "Fresh bread smells wonderful.",
  "Quantum computers use qubits.", "He repaired the old bicycle."];

describe("POST /v1/embeddings", () => {
  test("OpenAI shape; unit-length vectors; related sentences closer than unrelated ones (official client)", async () => {
    const res = await on.client.embeddings.create({model: MODEL, input: ["A man is playing a guitar.", "Someone strums a guitar on stage.",
      "The stock market crashed on Monday."]});
    assert.equal(res.object, "list");
    assert.equal(res.model, MODEL);
    assert.deepEqual(res.data.map((d) => [d.object, d.index]), [["embedding", 0], ["embedding", 1], ["embedding", 2]]);
    const [a, b, c] = res.data.map((d) => d.embedding);
    for (const v of [a!, b!, c!]) {
      assert.equal(v.length, 384);
      assert.ok(Math.abs(norm(v) - 1) < 1e-5, `unit length, got ${norm(v)}`);
    }
    assert.ok(dot(a!, b!) > dot(a!, c!) + 0.3, `related ${dot(a!, b!)} vs unrelated ${dot(a!, c!)}`);
    assert.ok(res.usage.prompt_tokens > 0 && res.usage.total_tokens === res.usage.prompt_tokens);
  });

  test("a batched request equals each input alone bit for bit, and equals SVC_NPU_EMB_BATCH=0", async () => {
    const before = await batchedPasses(on);
    const batched = await embed(on, {input: SHORT, encoding_format: "float"});
    assert.equal(await batchedPasses(on), before + 1, "8 short inputs ran as one batch pass");
    for (const [i, text] of SHORT.entries()) {
      const alone = await embed(on, {input: text, encoding_format: "float"});
      assert.deepEqual(batched.data[i]!.embedding, alone.data[0]!.embedding, `input ${i} alone`);
    }
    const unbatched = await embed(off, {input: SHORT, encoding_format: "float"});
    assert.equal(await batchedPasses(off), 0, "batching off: no batch pass");
    assert.deepEqual(unbatched.data.map((d) => d.embedding), batched.data.map((d) => d.embedding));
  });

  test("dimensions 32 and 384 accepted (first dims renormalised), 31 and 385 refused naming the field", async () => {
    const full = (await embed(on, {input: "Dimensions test sentence.", encoding_format: "float"})).data[0]!.embedding as number[];
    const cut = (await embed(on, {input: "Dimensions test sentence.", dimensions: 32, encoding_format: "float"})).data[0]!.embedding as number[];
    assert.equal(cut.length, 32);
    assert.ok(Math.abs(norm(cut) - 1) < 1e-5);
    const head = full.slice(0, 32);
    head.forEach((v, i) => assert.ok(Math.abs(v / norm(head) - cut[i]!) < 1e-6));
    assert.equal((await embed(on, {input: "x", dimensions: 384, encoding_format: "float"})).data[0]!.embedding.length, 384);
    for (const d of [31, 385]) {
      const r = await post(`${on.url}/v1/embeddings`, {model: MODEL, input: "x", dimensions: d});
      assert.equal(r.status, 400);
      assert.match(r.body.error.message, /^dimensions: must be an integer from 32 to 384/);
    }
  });

  test("base64 decodes (little-endian float32) to the same floats as the float format", async () => {
    const f = (await embed(on, {input: "Encoding check.", encoding_format: "float"})).data[0]!.embedding as number[];
    const b = (await embed(on, {input: "Encoding check.", encoding_format: "base64"})).data[0]!.embedding as string;
    const buf = Buffer.from(b, "base64");
    assert.equal(buf.length, 384 * 4);
    assert.deepEqual(Array.from({length: 384}, (_, i) => buf.readFloatLE(i * 4)), f);
  });

  test("token limit: 512 tokens accepted, 513 refused naming the limit and the input index", async () => {
    // "hello" is one token; [CLS] and [SEP] make 2 more.
    const ok = await embed(on, {input: ["short", "hello ".repeat(510).trim()]});
    assert.equal(ok.usage.prompt_tokens, 3 + 512);
    const r = await post(`${on.url}/v1/embeddings`, {model: MODEL, input: ["short", "hello ".repeat(511).trim()]});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /^input\[1\]: is 513 tokens; nx3-embedding-0.6b reads at most 512 tokens per input/);
  });

  test("query form: prompt_name query embeds the Instruct/Query text; document embeds as sent", async () => {
    const q = (await embed(on, {input: "cats", prompt_name: "query", instruction: "Find pets", encoding_format: "float"})).data[0]!.embedding;
    const same = (await embed(on, {input: "Instruct: Find pets\nQuery:cats", encoding_format: "float"})).data[0]!.embedding;
    assert.deepEqual(q, same);
    const d = (await embed(on, {input: "cats", prompt_name: "document", encoding_format: "float"})).data[0]!.embedding;
    const plain = (await embed(on, {input: "cats", encoding_format: "float"})).data[0]!.embedding;
    assert.deepEqual(d, plain);
  });

  test("token-id input, a model that is not loaded, and the main model are refused with 400", async () => {
    const ids = await post(`${on.url}/v1/embeddings`, {model: MODEL, input: [101, 7592, 102]});
    assert.equal(ids.status, 400);
    assert.match(ids.body.error.message, /^input: Input is text, not token ids/);
    const other = await post(`${on.url}/v1/embeddings`, {model: "svc-nx3.8-flash-next", input: "x"});
    assert.equal(other.status, 400);
    assert.match(other.body.error.message, /^model: must name a loaded embedding model: nx3-embedding-0.6b/);
  });
});
