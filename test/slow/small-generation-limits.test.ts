// Small generation at the model's own context edge (slow: an 8,191-token prompt on a 2-core machine), moved
// from test/e2e/small-generation.test.ts, which tests the other limits. nx3.5-2b runs the test model, which has
// SmolLM2's tokenizer and 8,192-token training context: the assertions are token counts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {post, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

const M = "nx3.5-2b";
let server: RunningServer;
let chatUrl: string;

before(async () => {
  server = await startServer({SVC_NPU_MODELS: `${M}=${await testModelPath()}`, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});
  chatUrl = `${server.url}/v1/chat/completions`;
});
after(async () => {
  await server?.stop();
});

const ask = (content: string) => [{role: "user" as const, content}];

describe("small generation: the model's own limit", () => {
  /** A user message whose prompt (template included) is exactly n tokens: "a a a ..." adds one token per " a". */
  let base = 0;
  const content = (tokens: number) => "a" + " a".repeat(tokens - base);
  before(async () => {
    const one = await server.client.chat.completions.create({model: M, messages: ask("a"), max_tokens: 1});
    base = one.usage!.prompt_tokens;
    const more = await server.client.chat.completions.create({model: M, messages: ask("a" + " a".repeat(50)), max_tokens: 1});
    assert.equal(more.usage!.prompt_tokens, base + 50, "one token per repeat");
  });

  test("the model's own limit (the test model, as SmolLM2, trains at 8,192): 8,192 prompt tokens refused; 8,191 answered with the cap as budget", async () => {
    const full = await post(chatUrl, {model: M, messages: ask(content(8_192)), max_tokens: 1});
    assert.equal(full.status, 400);
    assert.match(full.body.error.message, /the prompt has 8192 tokens.*holds 8192 positions \(its training context.*longest prompt here is 8191 tokens/);
    // The last prompt that fits, with max_tokens at the cap: run as the chat route does, fitted to the one position left.
    const edge = await post(chatUrl, {model: M, messages: ask(content(8_191)), max_tokens: 65_536, temperature: 0});
    assert.equal(edge.status, 200, edge.text);
    assert.equal(edge.body.usage.prompt_tokens, 8_191);
    assert.ok(edge.body.usage.completion_tokens <= 1);
    assert.ok(["length", "stop"].includes(edge.body.choices[0].finish_reason));
  });
});
