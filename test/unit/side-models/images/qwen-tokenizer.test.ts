// The image model's prompt tokenizer (side-models/images/qwen-tokenizer.ts) against llama.cpp's own test vectors for
// Qwen2's vocabulary (models/ggml-vocab-qwen2.gguf.inp and .out in the llama.cpp source node-llama-cpp bundles), and
// the 512-token cut the prompt writer makes with it.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {describe, test} from "node:test";
import {defaultModelsDir} from "../../../../src/models/resolve.ts";
import {bundledVocabFiles} from "../../../../src/models/bundled-vocab.ts";
import {QwenTokenizer} from "../../../../src/side-models/images/qwen-tokenizer.ts";
import {ImagePromptWriter, PROMPT_TOKENS, TEMPLATE_TOKENS, escapeAttention} from "../../../../src/side-models/images/prompt.ts";

const [vocab, inp, out] = await bundledVocabFiles(["ggml-vocab-qwen2.gguf", "ggml-vocab-qwen2.gguf.inp", "ggml-vocab-qwen2.gguf.out"],
  defaultModelsDir());
const tokenizer = await QwenTokenizer.load(vocab!);
const writer = await ImagePromptWriter.load(defaultModelsDir());

describe("Qwen2 tokenizer", () => {
  test("every llama.cpp test vector gives llama.cpp's tokens, and reads back as its text", () => {
    const texts = readFileSync(inp!, "utf8").split("\n__ggml_vocab_test__\n");
    const expected = readFileSync(out!, "utf8").split("\n").slice(0, -1);
    assert.ok(expected.length >= 40, `only ${expected.length} vectors`);
    for (const [i, line] of expected.entries()) {
      const want = line.trim() === "" ? [] : line.trim().split(" ").map(Number);
      assert.deepEqual(tokenizer.tokenize(texts[i]!), want, `vector ${i}: ${JSON.stringify(texts[i]).slice(0, 60)}`);
      assert.equal(tokenizer.detokenize(want), texts[i]);
    }
  });

  test("control-token text in a prompt is its characters", () => {
    assert.ok(tokenizer.tokenize("<|im_end|>").length > 1);
  });

  test("a cut inside a character drops the half character", () => {
    const ids = tokenizer.tokenize("鿃");
    assert.ok(ids.length > 1);
    assert.equal(tokenizer.detokenize(ids.slice(0, 1)), "");
  });
});

describe("image prompt", () => {
  const word = " cat";
  assert.equal(tokenizer.tokenize(word.repeat(10)).length, 10, "\" cat\" is one token");
  const room = PROMPT_TOKENS - TEMPLATE_TOKENS;

  test("a prompt that fits with the template is kept whole", () => {
    const p = writer.write(`a${word.repeat(room - 1)}`);
    assert.equal(p.tokens, PROMPT_TOKENS);
    assert.equal(p.cut, false);
    assert.equal(p.text, `a${word.repeat(room - 1)}`);
  });

  test("one token more is cut to 512 with the template", () => {
    const p = writer.write(`a${word.repeat(room)}`);
    assert.equal(p.tokens, PROMPT_TOKENS);
    assert.equal(p.cut, true);
    assert.equal(p.text, `a${word.repeat(room - 1)}`);
  });

  test("a short prompt counts its tokens and the template's", () => {
    assert.deepEqual(writer.write("a red cat"), {text: "a red cat", tokens: 3 + TEMPLATE_TOKENS, cut: false});
  });

  test("attention syntax is escaped, so the engine reads the characters", () => {
    assert.equal(escapeAttention("a (red:1.5) [cat] \\ dog"), "a \\(red:1.5\\) \\[cat\\] \\\\ dog");
    assert.equal(writer.write("(red)").text, "\\(red\\)");
  });
});
