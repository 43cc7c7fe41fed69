// A JSON answer after a family's lead-in (gpt-oss writes its answer in a final message): the schema binds after
// `<|channel|>final<|message|>`, with or without the `<|start|>assistant` that opens a message after reasoning.

import assert from "node:assert/strict";
import {after, before, test} from "node:test";
import {getLlama, type Llama} from "node-llama-cpp";
import {grammarAcceptsText} from "../../../src/engine/llama/internals.ts";
import {compileSchema, withAnswerPrefix} from "../../../src/grammar/index.ts";
import {gptOss} from "../../../src/templates/families/gpt-oss.ts";

let llama: Llama;
before(async () => {
  llama = await getLlama({gpu: false, build: "never"});
});
after(async () => {
  await llama?.dispose();
});

test("gpt-oss: the schema binds after the final channel's header", async () => {
  const schema = compileSchema({type: "object", properties: {answer: {type: "string"}}, required: ["answer"], additionalProperties: false});
  const g = withAnswerPrefix(schema, gptOss.answerLeadIn!);
  assert.notEqual(g.key, schema.key, "a prefixed grammar is cached apart from the plain one");
  const grammar = await llama.createGrammar({grammar: g.gbnf});
  assert.ok(grammarAcceptsText(grammar, '<|channel|>final<|message|>{"answer": "yes"}'));
  assert.ok(grammarAcceptsText(grammar, '<|start|>assistant<|channel|>final<|message|>{"answer": "yes"}'));
  assert.ok(!grammarAcceptsText(grammar, '{"answer": "yes"}'), "the lead-in is required");
  assert.ok(!grammarAcceptsText(grammar, '<|channel|>final<|message|>{"other": 1}'), "the schema still holds");
  assert.ok(!grammarAcceptsText(grammar, '<|channel|>analysis<|message|>{"answer": "yes"}'), "only the final channel");
});

test("a grammar without a root rule is refused", () => {
  assert.throws(() => withAnswerPrefix({gbnf: "value ::= \"x\"", key: "k"}, '"a"'), /root rule/);
});
