// Raw completions and the state routes in-process over the engine double: streamed vs plain through the
// SDK, the model listing, and refusals (moved from e2e/completions-and-ops.test.ts; the real tokenizer, the
// real model's replies, /health's build and model facts, /props and /slots stay there).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

let server: InProcessApp;
let url: string;
let client: OpenAI;

before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "2"}, script: () => "The capital of France is Paris. Its river is the Seine."});
  url = await server.listen();
  client = new OpenAI({baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0});
});
after(async () => {
  await server?.close();
});

const CHATML = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";

describe("completions", () => {
  test("streamed completion equals the non-streamed one and reports usage when asked", async () => {
    const params = {model: "m", prompt: CHATML, max_tokens: 16, temperature: 0};
    const plain = await client.completions.create(params);
    const stream = await client.completions.create({...params, stream: true, stream_options: {include_usage: true}});
    let text = "";
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]) {
        text += chunk.choices[0].text;
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, plain.choices[0]!.text);
    assert.equal(finish, plain.choices[0]!.finish_reason);
    assert.deepEqual(usage, plain.usage);
  });
});

describe("state routes", () => {
  test("GET /v1/models lists the one model, readable by the SDK", async () => {
    const page = await client.models.list();
    assert.deepEqual(page.data.map((m) => m.id), ["svc-nx3.8-flash-next"]);
    const raw = (await server.get("/v1/models")).body;
    assert.equal(raw.object, "list");
    assert.equal(raw.data[0].type, "model", "carries the Messages-style model fields too");
    assert.match(raw.data[0].created_at, /^\d{4}-\d\d-\d\dT/);
    const anthropicModels = [];
    for await (const m of new Anthropic({baseURL: url, apiKey: "x", maxRetries: 0}).models.list()) anthropicModels.push(m);
    assert.deepEqual(anthropicModels.map((m) => [m.id, m.type, m.display_name]), [["svc-nx3.8-flash-next", "model", "svc-nx3.8-flash-next"]]);
  });

  test("/detokenize refuses ids outside the vocabulary", async () => {
    const res = await server.post("/detokenize", {tokens: [1, 999999]});
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^tokens\[1\]: token id 999999 is not in the vocabulary/);
  });
});
