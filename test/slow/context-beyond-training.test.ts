// SVC_CTX_SIZE past the model's training length, as llama-server's -c: the test model, like the default model it
// copies, declares 8,192 training positions (llama.context_length), RoPE base 100,000 and no RoPE scaling; asked for
// 16,384 the server warns once at start, /health reports both lengths and the RoPE scaling llama.cpp applies (none),
// and a prompt longer than 8,192 tokens is served, not refused. One server start, in the slow tier: the long prefill
// is the cost of this file, about 8,400 tokens evaluated cold (14 s on the test model here, 2 minutes with other test
// runs on both cores).

import assert from "node:assert/strict";
import {request} from "node:http";
import {after, before, describe, test} from "node:test";
import {get, post, startServer, type RunningServer} from "../../support/server.ts";

const ASKED = 16_384;
const TRAINED = 8_192;
let server: RunningServer;

before(async () => {
  server = await startServer({SVC_CTX_SIZE: String(ASKED), SVC_PARALLEL: "2"});
});
after(async () => {
  await server?.stop();
});

/** A prompt of varied lines (no long repeats) of about 8,400 tokens: past the training length, and no longer than that needs. */
function longPrompt(): string {
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) lines.push(`Entry ${i}: the keeper of lighthouse ${i % 37} logged ${i * 7} gulls and ${i % 11} ships at dawn.`);
  return `${lines.join("\n")}\nSummary:`;
}

/**
 * POST without a client-side deadline: fetch gives up after 300 s without response headers, and on a busy
 * machine this prefill has taken longer than that (13 tokens/s measured on SmolLM2, 66 on the test model, with other
 * test runs on both cores).
 */
function postUnhurried(url: string, body: unknown): Promise<{status: number; body: any}> {
  return new Promise((resolve, reject) => {
    const req = request(url, {method: "POST", headers: {"content-type": "application/json"}}, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({status: res.statusCode ?? 0, body: JSON.parse(text)}));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe(`SVC_CTX_SIZE=${ASKED} on a model trained to ${TRAINED}`, () => {
  test("the start logs one warning naming both lengths and the RoPE scaling", () => {
    const warnings = server.logs.filter((l) => /svc warn .*above the model's training length/.test(l));
    assert.equal(warnings.length, 1, server.logs.join("\n"));
    assert.match(warnings[0]!, new RegExp(`SVC_CTX_SIZE ${ASKED} is above the model's training length ${TRAINED}`));
    assert.match(warnings[0]!, new RegExp(`quality past ${TRAINED} positions depends on RoPE scaling, here none`));
  });

  test("/health reports the training length, the context per region and in all, and the scaling applied", async () => {
    const h = (await get(`${server.url}/health`)).body;
    assert.deepEqual(h.context, {
      training_length: TRAINED,
      per_region: ASKED,
      regions: 2,
      total: 2 * ASKED,
      beyond_training_length: true,
      rope_scaling: {type: "none", factor: null, original_context_length: null, freq_base: 100000,
        applied: "none (the GGUF declares no RoPE scaling: positions past the training length are extrapolated)"},
    });
    assert.equal(h.engine.context_size, ASKED);
    const props = (await get(`${server.url}/props`)).body;
    assert.equal(props.default_generation_settings.n_ctx, ASKED);
  });

  test("a prompt longer than the training length is served", async () => {
    const prompt = longPrompt();
    const tokens = (await post(`${server.url}/tokenize`, {content: prompt})).body.tokens.length as number;
    assert.ok(tokens > TRAINED + 100 && tokens < ASKED - 100, `the prompt has ${tokens} tokens`);
    const res = await postUnhurried(`${server.url}/v1/completions`, {model: "m", prompt, max_tokens: 4, temperature: 0});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.usage.prompt_tokens, tokens);
    assert.equal(res.body.usage.completion_tokens, 4);
    assert.equal(res.body.choices[0].finish_reason, "length");
  });
});
