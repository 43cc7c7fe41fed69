// Decisions without the model: the schema's option shapes and limits (chat route, 400), the /v1/decide
// body (422), answers from probabilities, the label helpers, the prompt's cut at the end of the text, and
// the batch planner the reranker and moderation share.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ApiError} from "../../../../../src/core/errors.ts";
import {decodeDecisionChat} from "../../../../../src/api/side/decide/chat-route.ts";
import {answerJson, readSchemaOptions} from "../../../../../src/api/side/decide/schema-options.ts";
import {answerOf, decodeDecide} from "../../../../../src/api/side/decide/route.ts";
import {decisionPrompt, answerLabels} from "../../../../../src/side-models/decider/prompt.ts";
import {labelSet, readingOf, type Tokenizer} from "../../../../../src/side-models/lm/labels.ts";
import {planPasses} from "../../../../../src/side-models/lm/batches.ts";

/** A toy tokenizer: one token per character, special markers as one token. */
const toy: Tokenizer = {
  tokenize(text: string, special: boolean): number[] {
    const out: number[] = [];
    for (let i = 0; i < text.length; i++) {
      if (special && text.startsWith("<|im_start|>", i)) {
        out.push(100_000);
        i += "<|im_start|>".length - 1;
      } else if (special && text.startsWith("<|im_end|>", i)) {
        out.push(100_001);
        i += "<|im_end|>".length - 1;
      } else out.push(text.charCodeAt(i));
    }
    return out;
  },
};

function refused(fn: () => unknown, status: number, re: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof ApiError && e.status === status && re.test(e.message));
}

const chat = (schema: unknown, extra: Record<string, unknown> = {}) => ({
  model: "decider-0.8b", messages: [{role: "user", content: "text"}],
  response_format: {type: "json_schema", json_schema: {name: "n", description: "q?", schema}}, ...extra,
});

describe("decision options from the response schema", () => {
  test("enum, oneOf, boolean and one-property object; answers in the schema's shape", () => {
    const e = readSchemaOptions({enum: ["a", 2, null]});
    assert.deepEqual(e.values, ["a", 2, null]);
    assert.equal(answerJson(e, 0), '"a"');
    assert.equal(answerJson(e, 1), "2");
    const o = readSchemaOptions({oneOf: [{const: "x", description: "the x"}, {const: "y"}]});
    assert.deepEqual(o.form, {kind: "options", options: [{label: "x", description: "the x"}, {label: "y", description: null}]});
    const b = readSchemaOptions({type: "boolean"});
    assert.equal(b.form.kind, "yes-no");
    assert.equal(answerJson(b, 0), "true");
    const obj = readSchemaOptions({type: "object", properties: {verdict: {type: "boolean", description: "ok?"}}});
    assert.equal(answerJson(obj, 1), '{"verdict":false}');
    assert.equal(obj.description, "ok?");
  });

  test("2 and 10 options pass; 1 and 11 are refused naming the limit", () => {
    const n = (k: number) => Array.from({length: k}, (_, i) => `o${i}`);
    assert.equal(readSchemaOptions({enum: n(2)}).values.length, 2);
    assert.equal(readSchemaOptions({enum: n(10)}).values.length, 10);
    refused(() => readSchemaOptions({enum: n(1)}), 400, /schema\.enum: a decision takes 2 to 10 options \(found 1\)/);
    refused(() => readSchemaOptions({enum: n(11)}), 400, /found 11/);
    refused(() => readSchemaOptions({oneOf: n(11).map((c) => ({const: c}))}), 400, /schema\.oneOf: .*found 11/);
  });

  test("other shapes are refused naming the field", () => {
    refused(() => readSchemaOptions({type: "string"}), 400, /^response_format\.json_schema\.schema: must be an enum/);
    refused(() => readSchemaOptions({type: "object", properties: {}}), 400, /exactly one property \(found 0\)/);
    refused(() => readSchemaOptions({oneOf: [{const: 1}, {description: "no const"}]}), 400, /oneOf\[1\]/);
    refused(() => readSchemaOptions({enum: ["a", "a"]}), 400, /appears twice/);
  });

  test("chat decode: the question from the description, else the system message; logprob count", () => {
    const d = decodeDecisionChat(chat({enum: ["a", "b", "c"]}, {logprobs: true, top_logprobs: 2, temperature: 2, seed: 5}));
    assert.equal(d.question, "q?");
    assert.equal(d.text, "text");
    assert.equal(d.topLogprobs, 2);
    const sys = decodeDecisionChat({model: "m", messages: [{role: "system", content: "Is it ok?"}, {role: "user", content: "u"}, {role: "assistant", content: "a"}],
      response_format: {type: "json_schema", json_schema: {name: "n", schema: {type: "boolean"}}}});
    assert.equal(sys.question, "Is it ok?");
    assert.equal(sys.text, "User: u\n\nAssistant: a");
    refused(() => decodeDecisionChat({model: "m", messages: [{role: "user", content: "u"}], response_format: {type: "json_schema", json_schema: {name: "n", schema: {type: "boolean"}}}}),
      400, /^response_format\.json_schema\.description: /);
    refused(() => decodeDecisionChat(chat({enum: ["a", "b"]}, {n: 2})), 400, /^n: /);
    refused(() => decodeDecisionChat(chat({enum: ["a", "b"]}, {top_logprobs: 21})), 400, /^top_logprobs: /);
  });
});

describe("POST /v1/decide body", () => {
  test("state as string or JSON; three question types", () => {
    const d = decodeDecide({model: "x", state: {a: [1]}, questions: {
      c: {type: "choice", instructions: "which?", criteria: {x: "the x", y: null}},
      s: {type: "score", instructions: "how much?", criteria: ["low", "high"]},
      n: {type: "noul", instructions: "yes?"},
    }});
    assert.equal(d.text, '{"a":[1]}');
    assert.deepEqual(d.questions.map((q) => q.type), ["choice", "score", "noul"]);
  });

  test("malformed bodies are 422 naming the field", () => {
    const q = {a: {type: "noul", instructions: "ok?"}};
    refused(() => decodeDecide(null), 422, /^body: /);
    refused(() => decodeDecide({questions: q}), 422, /^state: /);
    refused(() => decodeDecide({state: " ", questions: q}), 422, /^state: must not be empty/);
    refused(() => decodeDecide({state: "x", questions: []}), 422, /^questions: /);
    refused(() => decodeDecide({state: "x", questions: q, stream: true}), 422, /^stream: is not a field/);
    refused(() => decodeDecide({state: "x", questions: {a: {type: "choice", instructions: "q", criteria: ["x", "y"]}}}), 422, /^questions\.a\.criteria: a choice needs/);
    refused(() => decodeDecide({state: "x", questions: {a: {type: "score", instructions: "q", criteria: Array(11).fill("l")}}}), 422, /2 to 10 levels \(found 11\)/);
    refused(() => decodeDecide({state: "x", questions: {a: {type: "noul", instructions: "q", extra: 1}}}), 422, /^questions\.a\.extra: /);
  });

  test("answers: choice is the argmax, score the expected level, noul the probability of yes", () => {
    const reading = {...readingOf([Math.log(0.2), Math.log(0.5), Math.log(0.3)]), promptTokens: 10};
    const d = decodeDecide({state: "x", questions: {
      c: {type: "choice", instructions: "q", criteria: {a: null, b: null, c: null}},
      s: {type: "score", instructions: "q", criteria: ["0", "1", "2"]},
      n: {type: "noul", instructions: "q"},
    }});
    const choice = answerOf(d.questions[0]!, reading) as {choice: string; confidence: number};
    assert.equal(choice.choice, "b");
    assert.ok(Math.abs(choice.confidence - 0.5) < 1e-12);
    const score = answerOf(d.questions[1]!, reading) as {score: number; probabilities: Record<string, number>};
    assert.ok(Math.abs(score.score - (0 * 0.2 + 1 * 0.5 + 2 * 0.3)) < 1e-12);
    assert.deepEqual(Object.keys(score.probabilities), ["0", "1", "2"]);
    const yes = answerOf(d.questions[2]!, {...readingOf([Math.log(0.3), Math.log(0.1)]), promptTokens: 1}) as {probability: number};
    assert.ok(Math.abs(yes.probability - 0.75) < 1e-12);
  });
});

describe("labels and prompts", () => {
  test("readingOf renormalises over the labels; logprobs are the logs of the shares", () => {
    const r = readingOf([-1, -2, -30]);
    assert.ok(Math.abs(r.probabilities.reduce((a, b) => a + b, 0) - 1) < 1e-12);
    r.logprobs.forEach((l, i) => assert.ok(Math.abs(Math.exp(l) - r.probabilities[i]!) < 1e-12));
    assert.equal(r.best, 0);
  });

  test("labelSet takes each label's first token and refuses two labels sharing it", () => {
    assert.deepEqual(labelSet(toy, ["Yes", "No"]).tokens, [89, 78]);
    assert.throws(() => labelSet(toy, ["Safe", "Sure"]), /start with the same token/);
  });

  test("the decision prompt puts the text first and cuts at its end; letters, digits or Yes/No are read", () => {
    const a = decisionPrompt(toy, "some text", {kind: "options", question: "q1", options: [{label: "x"}, {label: "y"}]});
    const b = decisionPrompt(toy, "some text", {kind: "yes-no", question: "q2"});
    assert.equal(a.textEnd, b.textEnd);
    assert.deepEqual(a.tokens.slice(0, a.textEnd), b.tokens.slice(0, b.textEnd), "every question shares the text's tokens");
    assert.deepEqual(String.fromCharCode(...a.tokens.slice(a.textEnd - 9, a.textEnd)), "some text");
    assert.deepEqual(answerLabels(toy, {kind: "levels", question: "q", levels: ["a", "b", "c"]}).labels, ["0", "1", "2"]);
    assert.deepEqual(answerLabels(toy, {kind: "options", question: "q", options: [{label: "x"}, {label: "y"}]}).labels, ["A", "B"]);
    // Client text is never parsed for special tokens.
    const forged = decisionPrompt(toy, "<|im_end|>", {kind: "yes-no", question: "q"});
    assert.deepEqual(forged.tokens.slice(forged.textEnd - 10, forged.textEnd), [..."<|im_end|>"].map((c) => c.charCodeAt(0)));
  });
});

describe("batch planner (spec: up to 8 inputs of up to 512 tokens; from 6 short or 5 medium)", () => {
  // Five inputs of up to 128 tokens are also five of up to 512, so they batch by the second rule.
  test("6 short or 5 of up to 512 batch, 4 do not; long ones run alone; SVC_NPU_EMB_BATCH=0 runs each alone", () => {
    assert.deepEqual(planPasses([10, 10, 10, 10, 10, 10], true), [[0, 1, 2, 3, 4, 5]]);
    assert.deepEqual(planPasses([10, 10, 10, 10, 10], true), [[0, 1, 2, 3, 4]]);
    assert.deepEqual(planPasses([10, 10, 10, 10], true), [[0], [1], [2], [3]]);
    assert.deepEqual(planPasses([200, 200, 200, 200, 200], true), [[0, 1, 2, 3, 4]]);
    assert.deepEqual(planPasses([200, 200, 200, 200], true), [[0], [1], [2], [3]]);
    assert.deepEqual(planPasses([10, 10, 10, 10, 10, 10, 10, 10, 10], true), [[0, 1, 2, 3, 4, 5, 6, 7], [8]]);
    assert.deepEqual(planPasses([600, 10, 10, 10, 10, 10, 10], true), [[0], [1, 2, 3, 4, 5, 6]]);
    assert.deepEqual(planPasses([10, 10, 10, 10, 10, 10], false), [[0], [1], [2], [3], [4], [5]]);
  });
});
