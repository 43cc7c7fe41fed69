// The test model (support/test-model.ts) does what the end-to-end tests that run on it rely on: it loads as the
// default model's architecture with its tokenizer and template, decodes greedily the same way twice, lets every
// token of the context move the reply (so a cache that reuses the wrong KV shows), writes only words, digits and
// JSON punctuation in free text, and never ends a reply on its own.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, LlamaLogLevel, type Llama, type LlamaContext, type LlamaModel, type Token} from "node-llama-cpp";
import {readGgufMetadata} from "../../src/models/gguf-writer.ts";
import {TEST_MODEL_SHAPE, testModelPath} from "../../support/test-model.ts";
import {ggufOf} from "../../support/llama-replicas.ts";

let llama: Llama;
let model: LlamaModel;
let context: LlamaContext;

before(async () => {
  llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
  model = await llama.loadModel({modelPath: await testModelPath()});
  context = await model.createContext({contextSize: 1024, sequences: 1, threads: 1});
});
after(async () => {
  await context?.dispose();
  await model?.dispose();
  await llama?.dispose();
});

const chat = (text: string) => `<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`;

async function greedy(prompt: string, n: number): Promise<number[]> {
  const seq = context.getSequence();
  try {
    const out: number[] = [];
    for await (const token of seq.evaluate(model.tokenize(prompt, true), {temperature: 0})) {
      out.push(token);
      if (out.length >= n) break;
    }
    return out;
  } finally {
    seq.dispose();
  }
}

describe("the test model", () => {
  test("is the default model's architecture with its tokenizer and chat template, at the test model's size", async () => {
    const [{metadata: ours}, {metadata: real}] = await Promise.all([readGgufMetadata(await testModelPath()), readGgufMetadata(await ggufOf())]);
    assert.equal(ours.get("general.architecture")?.value, real.get("general.architecture")?.value);
    for (const key of ["tokenizer.chat_template", "tokenizer.ggml.merges", "tokenizer.ggml.tokens", "tokenizer.ggml.eos_token_id"]) {
      assert.deepEqual(ours.get(key), real.get(key), key);
    }
    assert.equal(ours.get("llama.block_count")?.value, TEST_MODEL_SHAPE.layers);
    assert.equal(ours.get("llama.context_length")?.value, real.get("llama.context_length")?.value);
    const vocab = await llama.loadModel({modelPath: await ggufOf(), vocabOnly: true});
    try {
      const text = chat("Héllo, wörld! <|im_end|> 12345\n\tdone");
      assert.deepEqual(model.tokenize(text, true), vocab.tokenize(text, true), "the same tokens as the default model");
    } finally {
      await vocab.dispose();
    }
  });

  test("greedy decoding repeats itself, and one changed word at the start of the prompt changes the reply", async () => {
    const a = await greedy(chat("Tell me about the sea and the ships that sail on it."), 24);
    assert.deepEqual(await greedy(chat("Tell me about the sea and the ships that sail on it."), 24), a);
    const b = await greedy(chat("Tell us about the sea and the ships that sail on it."), 24);
    assert.notDeepEqual(b, a, "the reply depends on a token 12 positions before its start");
  });

  test("free text is words, digits and JSON punctuation, and no reply ends by itself", async () => {
    for (const prompt of [chat("Say hello."), chat("Count from 1 to 20."), "The quick brown fox", chat("Name a city.")]) {
      const tokens = await greedy(prompt, 96);
      assert.equal(tokens.length, 96, `${JSON.stringify(prompt)}: the reply ran to its budget`);
      for (const t of tokens) assert.ok(!model.isSpecialToken(t as Token), `${JSON.stringify(prompt)}: token ${t} is not a control token`);
      const text = model.detokenize(tokens as Token[]);
      assert.match(text, /^[A-Za-z0-9 "{}[\],:.]+$/, `${JSON.stringify(prompt)}: ${text}`);
    }
  });
});
