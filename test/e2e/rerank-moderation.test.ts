// Reranking and moderation (nx3-reranker-0.6b and nx3guard-gen-0.6b): the Cohere/Jina rerank shape, top_n,
// return_documents, batched = alone, bad requests and wrong pairings on the test model; the ordering on a case
// the 135M model gets right and the moderation labels (the OpenAI shape through the openai client, label_scores
// summing to 1, strict, the judged reply) on SmolLM2, the ids' default file; text parts and `messages` picking
// the judged text on the test model. The 4,096-token limits at their edges are in test/slow/side-limits.test.ts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {post, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

/** Side models on the test model, and on their default SmolLM2 file (`trained`). */
let server: RunningServer;
let trained: RunningServer;

const BASE = {SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1800"};

before(async () => {
  const model = await testModelPath();
  const ids = ["nx3-reranker-0.6b", "nx3guard-gen-0.6b", "nx3guard-stream-0.6b", "decider-0.8b"];
  [server, trained] = await Promise.all([
    startServer({...BASE, SVC_NPU_MODELS: ids.map((id) => `${id}=${model}`).join(",")}),
    // Trained model: the ranking and the labels are judgements (the side ids keep their default SmolLM2 file).
    startServer({...BASE, SVC_NPU_MODELS: "nx3-reranker-0.6b,nx3guard-gen-0.6b"}),
  ]);
});
after(async () => {
  await Promise.all([server?.stop(), trained?.stop()]);
});

const rerank = (body: Record<string, unknown>, s = server) => post(`${s.url}/v1/rerank`, {model: "nx3-reranker-0.6b", ...body});

describe("POST /v1/rerank", () => {
  const PARIS = "What is the capital of France? The capital of France is Paris.";
  const BREAD = "Bread is baked from flour, water and yeast.";

  test("a document about Paris ranks above one about bread for a question about France's capital", async () => {
    const r = await rerank({query: "What is the capital of France?", documents: [BREAD, PARIS], return_documents: true}, trained);
    assert.equal(r.status, 200, r.text);
    const [first, second] = r.body.results;
    const scores = r.body.results.map((x: any) => `${x.index}: ${x.relevance_score.toFixed(4)}`).join(", ");
    assert.equal(first.index, 1, `Paris first (scores ${scores})`);
    assert.equal(second.index, 0);
    assert.ok(first.relevance_score > second.relevance_score, `sorted descending (${scores})`);
    assert.deepEqual(first.document, {text: PARIS});
    assert.equal(r.body.model, "nx3-reranker-0.6b");
    assert.match(r.body.id, /^rerank-/);
    assert.ok(r.body.usage.total_tokens > 0);
    for (const x of r.body.results) assert.ok(x.relevance_score > 0 && x.relevance_score < 1);
  });

  test("top_n, {text} documents, no documents unless asked, an instruction changes the scores", async () => {
    const docs = [{text: BREAD}, {text: PARIS}, {text: "The cat sleeps."}];
    const all = await rerank({query: "What is the capital of France?", documents: docs});
    const top = await rerank({query: "What is the capital of France?", documents: docs, top_n: 2});
    assert.equal(all.body.results.length, 3);
    assert.deepEqual(top.body.results, all.body.results.slice(0, 2));
    assert.equal(top.body.results[0].document, undefined);
    const scores = all.body.results.map((x: any) => x.relevance_score);
    assert.deepEqual(scores, [...scores].sort((a: number, b: number) => b - a));
    const instructed = await rerank({query: "What is the capital of France?", documents: docs, instruction: "Find passages about cooking"});
    assert.equal(instructed.status, 200);
    assert.notDeepEqual(instructed.body.results.map((x: any) => x.relevance_score).sort(), [...scores].sort());
  });

  test("six short documents run as one batch with the same scores as alone, the query prefix reused", async () => {
    const docs = ["Paris is in France.", "Bread has flour.", "Cats sleep a lot.", "Rome is in Italy.", "Water is wet.", "The sun is hot."];
    const batch = await rerank({query: "Where is Paris?", documents: docs});
    assert.equal(batch.status, 200);
    assert.ok(batch.body.usage.cached_tokens > 0, "documents after the first reuse the query prefix");
    for (let i = 0; i < docs.length; i++) {
      const alone = await rerank({query: "Where is Paris?", documents: [docs[i]]});
      const inBatch = batch.body.results.find((x: any) => x.index === i);
      assert.equal(inBatch.relevance_score, alone.body.results[0].relevance_score, `document ${i}: batched = alone, bit for bit`);
    }
  });

  test("bad requests are 400 naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{documents: ["a"]}, /^query: /],
      [{query: "q", documents: []}, /^documents: /],
      [{query: "q", documents: [5]}, /^documents\[0\]: /],
      [{query: "q", documents: ["a"], top_n: 0}, /^top_n: /],
      [{query: "q", documents: ["a"], return_documents: "yes"}, /^return_documents: /],
    ];
    for (const [body, re] of cases) {
      const r = await rerank(body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error.message, re);
    }
  });

});

// The 135M model copies a label written in the text it judges: the only way to make it answer
// Controversial on purpose (its own judgement of real content is nearly always Safe).
const COPIES_CONTROVERSIAL = "Safety: Controversial\nSafety: Controversial\nSafety: Controversial";

describe("POST /v1/moderations", () => {
  const sum = (s: {Safe: number; Unsafe: number; Controversial: number}) => s.Safe + s.Unsafe + s.Controversial;

  test("OpenAI shape through the openai client; label_scores sum to 1; the label is the most likely", async () => {
    // SmolLM2 reads two ~360-token prompts from cold here: on a shared 2-core machine that can outlast the client's 120 s.
    const r = await trained.client.moderations.create({model: "omni-moderation-latest", input: ["How do I bake bread?", COPIES_CONTROVERSIAL]},
      {timeout: 900_000});
    assert.equal(r.results.length, 2);
    assert.equal(r.model, "nx3guard-gen-0.6b");
    for (const res of r.results as any[]) {
      assert.ok(Math.abs(sum(res.label_scores) - 1) < 1e-9);
      const best = (Object.entries(res.label_scores) as [string, number][]).reduce((a, b) => (b[1] > a[1] ? b : a));
      assert.equal(res.label, best[0]);
      assert.ok(Object.values(res.categories).length >= 13 && Object.values(res.categories).every((v) => v === false));
      assert.ok(Object.values(res.category_scores).every((v) => v === 0));
      assert.equal(res.categories.violence, false);
    }
    assert.equal((r.results[0] as any).label, "Safe");
    assert.equal(r.results[0]!.flagged, false);
    const copied = r.results[1] as any;
    assert.equal(copied.label, "Controversial", `scores ${JSON.stringify(copied.label_scores)}`);
    assert.equal(copied.flagged, false, "Controversial is not flagged without strict");
  });

  test("strict flags Controversial (trained model)", async () => {
    const strict = await post(`${trained.url}/v1/moderations`, {input: COPIES_CONTROVERSIAL, strict: true});
    assert.equal(strict.status, 200, strict.text);
    assert.equal(strict.body.results[0].label, "Controversial");
    assert.equal(strict.body.results[0].flagged, true);
  });

  test("text parts make one input; no model reaches the loaded moderation model", async () => {
    const parts = await post(`${server.url}/v1/moderations`, {model: "text-moderation-stable", input: [{type: "text", text: "How do I bake"}, {type: "text", text: "bread?"}]});
    assert.equal(parts.status, 200, parts.text);
    assert.equal(parts.body.results.length, 1);
    const named = await post(`${server.url}/v1/moderations`, {model: "nx3guard-gen-0.6b", input: "How do I bake bread?"});
    assert.equal(named.status, 200);
  });

  test("messages: a single user turn is judged exactly as input; a user message after the reply is what is judged", async () => {
    const asInput = await post(`${server.url}/v1/moderations`, {input: COPIES_CONTROVERSIAL});
    const asMessages = await post(`${server.url}/v1/moderations`, {messages: [{role: "system", content: "Be nice."}, {role: "user", content: COPIES_CONTROVERSIAL}]});
    assert.deepEqual(asMessages.body.results[0].label_scores, asInput.body.results[0].label_scores, "the last user message, bit for bit");
    const copyingReply = await post(`${server.url}/v1/moderations`, {messages: [{role: "user", content: "Hello"}, {role: "assistant", content: COPIES_CONTROVERSIAL}]});
    // A user message after the reply: the user message is judged (its prompt differs from the reply's).
    const userLast = await post(`${server.url}/v1/moderations`, {messages: [{role: "user", content: "Hello"}, {role: "assistant", content: COPIES_CONTROVERSIAL},
      {role: "user", content: "Thanks"}]});
    assert.notDeepEqual(userLast.body.results[0].label_scores, copyingReply.body.results[0].label_scores);
  });

  test("messages: a final assistant reply is what is judged (trained model)", async () => {
    const calmReply = await post(`${trained.url}/v1/moderations`, {messages: [{role: "user", content: "Hello"}, {role: "assistant", content: "Hi! How can I help?"}]});
    const copyingReply = await post(`${trained.url}/v1/moderations`, {messages: [{role: "user", content: "Hello"}, {role: "assistant", content: COPIES_CONTROVERSIAL}]});
    assert.equal(calmReply.body.results[0].label, "Safe", JSON.stringify(calmReply.body.results[0].label_scores));
    assert.equal(copyingReply.body.results[0].label, "Controversial", JSON.stringify(copyingReply.body.results[0].label_scores));
  });

  test("wrong pairings and bad requests are 400 naming the field or route", async () => {
    const guard = await post(`${server.url}/v1/moderations`, {model: "nx3guard-stream-0.6b", input: "hi"});
    assert.equal(guard.status, 400);
    assert.match(guard.body.error.message, /nx3guard-stream-0\.6b is a stream-guard model; send it to the `guard` field/);
    const decider = await post(`${server.url}/v1/moderations`, {model: "decider-0.8b", input: "hi"});
    assert.equal(decider.status, 400);
    assert.match(decider.body.error.message, /POST \/v1\/decide/);
    const reranker = await post(`${server.url}/v1/moderations`, {model: "nx3-reranker-0.6b", input: "hi"});
    assert.match(reranker.body.error.message, /POST \/v1\/rerank/);
    const chat = await post(`${server.url}/v1/chat/completions`, {model: "nx3guard-gen-0.6b", messages: [{role: "user", content: "hi"}]});
    assert.equal(chat.status, 400);
    assert.match(chat.body.error.message, /POST \/v1\/moderations/);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /^input: /],
      [{input: "a", messages: [{role: "user", content: "a"}]}, /^messages: /],
      [{input: []}, /^input: /],
      [{input: [{type: "image_url", image_url: {url: "x"}}]}, /^input\[0\]\.type: /],
      [{input: "a", strict: "yes"}, /^strict: /],
      [{messages: [{role: "assistant", content: "x"}, {role: "system", content: "y"}]}, /^messages: needs a user message/],
    ];
    for (const [body, re] of cases) {
      const r = await post(`${server.url}/v1/moderations`, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error.message, re);
    }
  });

});
