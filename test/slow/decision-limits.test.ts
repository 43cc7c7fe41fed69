// The decision text limit at its edge (slow: an 8,192-token evaluation on a 2-core machine). Moved from
// test/e2e/decisions.test.ts, which tests the rest of decisions. The decider runs the test model (SmolLM2's
// tokenizer and 8,192-token training context at a fraction of the cost): the assertions are token counts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {longPost, post, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

let s0: RunningServer;

before(async () => {
  s0 = await startServer({SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_QUEUE_TIMEOUT: "1800", SVC_NPU_MODELS: `decider-0.8b=${await testModelPath()}`,
    SVC_NPU_DEC_RESUME: "0"});
});
after(async () => {
  await s0?.stop();
});

describe("decision text limit (8,192 tokens including question and template)", () => {
  // "hello" and each " hello" are one token each; the question's overhead is measured on the server.
  const body = (words: number) => ({state: ["hello", ...Array(words - 1).fill(" hello")].join(""), questions: {a: {type: "noul", instructions: "Is it a greeting?"}}});

  test("8,192 tokens are served; 8,193 are refused with 400 naming the limit", {timeout: 1_800_000}, async () => {
    const probe = await post(`${s0.url}/v1/decide`, body(1));
    const overhead = probe.body.usage.prompt_tokens - 1;
    const over = await post(`${s0.url}/v1/decide`, body(8193 - overhead));
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.error.message, /questions\.a: .*up to 8192 tokens; this one takes 8193/);
    const chatOver = await post(`${s0.url}/v1/chat/completions`, {model: "decider-0.8b", messages: [{role: "user", content: body(8200).state}],
      response_format: {type: "json_schema", json_schema: {name: "g", description: "Is it a greeting?", schema: {type: "boolean"}}}});
    assert.equal(chatOver.status, 400, chatOver.text);
    assert.match(chatOver.body.error.message, /^messages: .*up to 8192 tokens/);
    const edge = await longPost(`${s0.url}/v1/decide`, body(8192 - overhead));
    assert.equal(edge.status, 200, edge.text);
    assert.equal(edge.body.usage.prompt_tokens, 8192);
  });
});
