// Raw completions (text seen exactly as sent, or token ids) and the state routes, on the test model; the default
// model's verified sha256 in /health on the trained model.
// (Streamed vs plain through the SDK, /v1/models and the /detokenize refusal run in-process:
// integration/completions-and-ops.)

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {expectedRegions, get, post, TEST_REPLICAS, TIMING_FIELDS, trainedModel, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";

let server: RunningServer;

before(async () => {
  server = await sharedServer({SVC_PARALLEL: "2"});
});
after(async () => {
  await server?.stop();
});

const CHATML = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";

describe("completions", () => {
  test("a raw prompt with special markers is seen exactly as sent", async () => {
    const res = await server.client.completions.create({model: "m", prompt: CHATML, max_tokens: 12, temperature: 0});
    assert.equal(res.object, "text_completion");
    assert.equal(res.model, "svc-nx3.8-flash-next");
    assert.ok(res.choices[0]!.text.length > 0);
    const tok = await post(`${server.url}/tokenize`, {content: CHATML, parse_special: true});
    assert.equal(res.usage!.prompt_tokens, tok.body.tokens.length, "markers are single special tokens, not text");
    const timings = (res as unknown as {timings: object}).timings;
    assert.deepEqual(Object.keys(timings).sort(), [...TIMING_FIELDS].sort());
  });

  test("token ids give the same greedy reply as the text they stand for", async () => {
    const tokens = (await post(`${server.url}/tokenize`, {content: CHATML})).body.tokens as number[];
    const byText = await server.client.completions.create({model: "m", prompt: CHATML, max_tokens: 16, temperature: 0});
    const byIds = await server.client.completions.create({model: "m", prompt: tokens, max_tokens: 16, temperature: 0});
    assert.equal(byIds.choices[0]!.text, byText.choices[0]!.text);
    assert.equal(byIds.usage!.prompt_tokens, tokens.length);
  });

  test("stop strings work on raw completions", async () => {
    const free = await server.client.completions.create({model: "m", prompt: CHATML, max_tokens: 16, temperature: 0});
    const text = free.choices[0]!.text;
    const word = text.trim().split(/\s+/)[1]!;
    const res = await server.client.completions.create({model: "m", prompt: CHATML, max_tokens: 16, temperature: 0, stop: [word]});
    assert.equal(res.choices[0]!.text, text.slice(0, text.indexOf(word)));
    assert.equal(res.choices[0]!.finish_reason, "stop");
  });
});

describe("batching after early stops", () => {
  test("a scored reply cut by a stop string leaves no region marked as generating", async () => {
    const health = async () => (await get(`${server.url}/health`)).body.engine.step_waits_timed_out as number;
    const scored = {model: "m", messages: [{role: "user" as const, content: "Count from 1 to 30 with commas."}], max_tokens: 40, temperature: 0.5, seed: 3, logprobs: true};
    const free = (await server.client.chat.completions.create(scored)).choices[0]!.message.content!;
    const stop = free.trim().charAt(1);
    assert.ok(stop.length === 1, `a stop character from the free reply ${JSON.stringify(free)}`);
    const before = await health();
    // A long reply on one region while the scored one is cut short on the other: if the cut region stayed
    // marked as generating, every later step of the long reply would wait for it and time out.
    const long = server.client.chat.completions.create({model: "m", messages: [{role: "user", content: "Write a long story about a lighthouse."}], max_tokens: 60, temperature: 0});
    const cut = await server.client.chat.completions.create({...scored, stop: [stop]});
    assert.equal(cut.choices[0]!.finish_reason, "stop");
    const longReply = await long;
    assert.ok(longReply.usage!.completion_tokens > 20);
    const timedOut = (await health()) - before;
    assert.ok(timedOut < 5, `step batches waited in vain ${timedOut} times for a region that had stopped`);
  });
});

describe("state routes", () => {
  test("GET /health reports the build, budget fields, template, stop ids and queue", async () => {
    const h = (await get(`${server.url}/health`)).body;
    assert.equal(h.status, "ok");
    assert.match(h.version.engine, TEST_REPLICAS ? /^llama-server replicas \(b\d+-[0-9a-f]+\)$/ : /node-llama-cpp 3\.22\.1/);
    assert.deepEqual(h.token_budget_aliases, ["max_tokens", "max_completion_tokens", "max_output_tokens"]);
    assert.equal(h.max_tokens_cap, 65536);
    assert.equal(h.chat_template.check, "ok");
    assert.equal(h.chat_template.path, "gguf:tokenizer.chat_template");
    assert.match(h.chat_template.sha256, /^[0-9a-f]{64}$/);
    assert.ok(h.stop_ids.includes(2), "<|im_end|> (id 2) ends a reply");
    assert.equal(h.queued, 0);
    assert.equal(h.longest_wait_s, 0);
  });

  test("GET /props and GET /slots describe the regions", async () => {
    const props = (await get(`${server.url}/props`)).body;
    assert.equal(props.total_slots, expectedRegions(2));
    assert.equal(props.default_generation_settings.n_ctx, 2048);
    assert.equal(props.default_generation_settings.params.n_predict, -1);
    assert.equal(props.modalities.vision, false);
    assert.match(props.chat_template, /im_start/);
    assert.match(props.build_info, /svc/);
    const slots = (await get(`${server.url}/slots`)).body;
    assert.deepEqual(slots.map((s: {id: number; n_ctx: number}) => [s.id, s.n_ctx]), Array.from({length: expectedRegions(2)}, (_, id) => [id, 2048]));
  });

  test("POST /tokenize and /detokenize round-trip, with pieces and special handling", async () => {
    const text = "Hello <|im_end|> café";
    const special = (await post(`${server.url}/tokenize`, {content: text})).body.tokens as number[];
    const plain = (await post(`${server.url}/tokenize`, {content: text, parse_special: false})).body.tokens as number[];
    assert.ok(special.includes(2) && !plain.includes(2), "parse_special decides whether the marker is one token");
    const back = (await post(`${server.url}/detokenize`, {tokens: special})).body.content;
    assert.equal(back, text);
    const pieces = (await post(`${server.url}/tokenize`, {content: "café", with_pieces: true})).body.tokens as {id: number; piece: string | number[]}[];
    const bytes = pieces.flatMap((p) => (typeof p.piece === "string" ? [...Buffer.from(p.piece, "utf8")] : p.piece));
    assert.deepEqual(bytes, [...Buffer.from("café", "utf8")], "pieces carry the exact bytes");
    const withBos = (await post(`${server.url}/tokenize`, {content: "Hi", add_special: true})).body.tokens;
    assert.deepEqual(withBos, (await post(`${server.url}/tokenize`, {content: "Hi"})).body.tokens, "this model adds no BOS");
  });

});

describe("the default model's identity", () => {
  let trained: RunningServer;
  // Trained model: /health must report the default model's verified sha256; the test model is a local file (not hashed).
  before(async () => {
    trained = await sharedServer(trainedModel());
  });
  after(async () => {
    await trained?.stop();
  });

  test("GET /health reports the default model's verified sha256", async () => {
    const h = (await get(`${trained.url}/health`)).body;
    assert.equal(h.model.sha256, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
  });
});
