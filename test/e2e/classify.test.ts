// POST /classify on a small real classifier built by test code (test/fixtures/classifier/build.ts):
// MiniLM's encoder and pooler with a two-label sentiment head trained here. Also: the conversion is kept
// and reused on a second start, a changed checkpoint reconverts, bad fine-tune directories are refused at
// start with one line, and wrong model-to-route pairings are 400s naming the route (the stream guard there, only
// refused, runs the test model).

import assert from "node:assert/strict";
import {mkdtemp, mkdir, readFile, rm, stat, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {buildSentimentClassifier} from "../fixtures/classifier/build.ts";
import {encodeSafetensors, SafetensorsFile} from "../../src/models/hf-convert/safetensors.ts";
import {post, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

let root: string;
let clfDir: string;
let server: RunningServer;
const GGUF = () => join(clfDir, "svc-converted.gguf");
const env = (models: string) => ({SVC_NPU_MODELS: models, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-classify-"));
  clfDir = join(root, "sentiment-clf");
  await buildSentimentClassifier(clfDir);
  server = await startServer(env(`nx3-embedding-0.6b,nx3guard-stream-0.6b=${await testModelPath()},${clfDir}`));
});
after(async () => {
  await server?.stop();
  await rm(root, {recursive: true, force: true});
});

const classify = (body: Record<string, unknown>, s = server) => post(`${s.url}/classify`, {model: "sentiment-clf", ...body});

/** Starts a server expected to refuse its SVC_NPU_MODELS; returns the start's log. */
async function refusedStart(models: string): Promise<string> {
  await assert.rejects(startServer(env(models)), (e: Error) => {
    assert.match(e.message, /server exited with code 1 before listening/);
    refusedLog = e.message;
    return true;
  });
  return refusedLog;
}
let refusedLog = "";

describe("POST /classify", () => {
  test("obvious sentences get the right labels; probs sum to 1; vLLM response shape", async () => {
    const r = await classify({input: ["I absolutely love this wonderful film, it made me so happy.", "This was a horrible, awful experience and I hate it."]});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.object, "list");
    assert.equal(r.body.model, "sentiment-clf");
    assert.match(r.body.id, /^classify-/);
    assert.equal(typeof r.body.created, "number");
    assert.deepEqual(r.body.data.map((d: {index: number; label: string; num_classes: number}) => [d.index, d.label, d.num_classes]),
      [[0, "POSITIVE", 2], [1, "NEGATIVE", 2]]);
    for (const d of r.body.data) assert.ok(Math.abs(d.probs[0] + d.probs[1] - 1) < 1e-9);
    assert.ok(r.body.usage.prompt_tokens > 10);
    assert.equal(r.body.usage.total_tokens, r.body.usage.prompt_tokens);
  });

  test("use_activation false returns raw scores whose softmax is the default probs", async () => {
    const text = "What a fantastic evening.";
    const raw = (await classify({input: text, use_activation: false})).body.data[0];
    const act = (await classify({input: text})).body.data[0];
    assert.equal(raw.label, act.label);
    const exps = raw.probs.map((s: number) => Math.exp(s));
    const sum = exps[0] + exps[1];
    assert.ok(raw.probs.some((s: number) => s < 0 || s > 1) || Math.abs(raw.probs[0] + raw.probs[1] - 1) > 1e-6, "raw scores are logits, not probabilities");
    exps.forEach((e: number, k: number) => assert.ok(Math.abs(e / sum - act.probs[k]) < 1e-9));
  });

  test("token-id input equals the same text; add_special_tokens and truncate_prompt_tokens apply", async () => {
    const text = (await classify({input: "I love it"})).body;
    // MiniLM's vocabulary: [CLS]=101, i=1045, love=2293, it=2009, [SEP]=102.
    const ids = (await classify({input: [101, 1045, 2293, 2009, 102]})).body;
    assert.deepEqual(ids.data[0].probs, text.data[0].probs);
    assert.equal(ids.usage.prompt_tokens, 5);
    const several = (await classify({input: [[101, 1045, 2293, 2009, 102], [101, 1045, 2293, 2009, 102]]})).body;
    assert.deepEqual(several.data.map((d: {probs: number[]}) => d.probs), [text.data[0].probs, text.data[0].probs]);
    assert.equal((await classify({input: "I love it", add_special_tokens: false})).body.usage.prompt_tokens, 3);
    assert.equal((await classify({input: "I love it very much indeed", truncate_prompt_tokens: 5})).body.usage.prompt_tokens, 5);
    const bad = await classify({input: "x", truncate_prompt_tokens: 513});
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /^truncate_prompt_tokens: must be -1 \(the model's limit\) or an integer from 1 to 512/);
  });

  test("token limit: 512 tokens accepted, 513 refused naming the limit", async () => {
    assert.equal((await classify({input: "hello ".repeat(510).trim()})).body.usage.prompt_tokens, 512);
    const r = await classify({input: "hello ".repeat(511).trim()});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /^input: is 513 tokens; sentiment-clf reads at most 512 tokens per input/);
  });

  test("chat messages, the guard model and wrong pairings are refused with 400 naming the route", async () => {
    const msgs = await classify({messages: [{role: "user", content: "hi"}]});
    assert.equal(msgs.status, 400);
    assert.match(msgs.body.error.message, /^messages: chat messages are not accepted by POST \/classify/);
    const guard = await classify({model: "nx3guard-stream-0.6b", input: "hi"});
    assert.equal(guard.status, 400);
    assert.match(guard.body.error.message, /nx3guard-stream-0.6b is a stream-guard model; send it to the `guard` field of POST \/v1\/chat\/completions/);
    const embedder = await classify({model: "nx3-embedding-0.6b", input: "hi"});
    assert.equal(embedder.status, 400);
    assert.match(embedder.body.error.message, /nx3-embedding-0.6b is an embedding model; send it to POST \/v1\/embeddings/);
    const onEmbeddings = await post(`${server.url}/v1/embeddings`, {model: "sentiment-clf", input: "hi"});
    assert.equal(onEmbeddings.status, 400);
    assert.match(onEmbeddings.body.error.message, /sentiment-clf is a classifier model; send it to POST \/classify/);
  });
});

describe("own fine-tune conversion and refusals at start", () => {
  test("converted at first start, reused on the second (file untouched), reconverted when the checkpoint changes", async () => {
    assert.ok(server.logs.some((l) => l.includes("model converted") && l.includes("name=sentiment-clf") && l.includes('reason="first start"')));
    const mtime = (await stat(GGUF())).mtimeMs;
    const positive = (await classify({input: "I love this."})).body.data[0].probs;
    await server.stop();
    server = await startServer(env(clfDir));
    assert.ok(server.logs.some((l) => l.includes("converted model reused") && l.includes("name=sentiment-clf")), "second start reuses");
    assert.ok(!server.logs.some((l) => l.includes("model converted") && l.includes("name=sentiment-clf")));
    assert.equal((await stat(GGUF())).mtimeMs, mtime, "the kept GGUF was not rewritten");
    assert.deepEqual((await classify({input: "I love this."})).body.data[0].probs, positive);
    await server.stop();

    // Change the checkpoint: swap the head's two rows, so every label flips.
    const st = await SafetensorsFile.open(join(clfDir, "model.safetensors"));
    const tensors = Object.fromEntries([...st.tensors].filter(([, i]) => i.dtype === "F32").map(([n, i]) => [n, {shape: i.shape, data: st.float32(n)}]));
    const w = tensors["classifier.weight"]!.data;
    const h = w.length / 2;
    tensors["classifier.weight"]!.data = Float32Array.from([...w.subarray(h), ...w.subarray(0, h)]);
    const b = tensors["classifier.bias"]!.data;
    tensors["classifier.bias"]!.data = Float32Array.from([b[1]!, b[0]!]);
    await writeFile(join(clfDir, "model.safetensors"), encodeSafetensors(tensors));
    server = await startServer(env(clfDir));
    assert.ok(server.logs.some((l) => l.includes("model converted") && l.includes("checkpoint changed")));
    const flipped = (await classify({input: "I love this."})).body.data[0];
    assert.equal(flipped.label, "NEGATIVE", "the swapped head now calls the positive sentence NEGATIVE");
    assert.ok(Math.abs(flipped.probs[0] - positive[1]) < 1e-6);
  });

  test("a truncated checkpoint, a bare adapter and another architecture are refused at start with one line", async () => {
    await server.stop();
    const truncated = join(root, "truncated");
    await mkdir(truncated);
    for (const f of ["config.json", "tokenizer.json", "model.safetensors"]) await writeFile(join(truncated, f), await readFile(join(clfDir, f)));
    await truncate(join(truncated, "model.safetensors"), 50_000_000);
    let log = await refusedStart(truncated);
    assert.match(log, /could not start: .*model.safetensors: tensor .* ends past the end of the file; the file is truncated/);

    const adapter = join(root, "adapter");
    await mkdir(adapter);
    await writeFile(join(adapter, "adapter_config.json"), "{}");
    await writeFile(join(adapter, "adapter_model.safetensors"), "");
    log = await refusedStart(adapter);
    assert.match(log, /could not start: SVC_NPU_MODELS: .*adapter: found no config.json, model.safetensors, tokenizer.json \(it holds a bare adapter: adapter_config.json\).*; what runs: a BERT sequence classifier/);

    const llama = join(root, "llama-tune");
    await mkdir(llama);
    for (const f of ["tokenizer.json", "model.safetensors"]) await writeFile(join(llama, f), "x");
    await writeFile(join(llama, "config.json"), JSON.stringify({architectures: ["LlamaForCausalLM"], model_type: "llama"}));
    log = await refusedStart(llama);
    assert.match(log, /could not start: SVC_NPU_MODELS: .*llama-tune: config.json describes LlamaForCausalLM \(model_type llama\); a BERT checkpoint .*; what runs: /);
  });
});
