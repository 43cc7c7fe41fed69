// The reply steering without a model: token texts are fed in, and what it binds (or replaces) is checked
// against the spec's rules for thinking and tools under a schema.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {SteerAction} from "../../../src/engine/engine.ts";
import {MAX_PREAMBLE_TOKENS, ReplySteering, type SteeringPlan} from "../../../src/pipeline/steering.ts";
import {createToolCallGrammars} from "../../../src/pipeline/tool-call-grammars.ts";
import {HERMES_CALLS} from "../../../src/templates/families/hermes.ts";

const SCHEMA = {gbnf: 'root ::= "{}"', key: "schema"};
const BRACE = 90;

/** Tokens are indexes into `texts`; tokenize maps a text back to a fresh id (recorded). */
function steer(plan: SteeringPlan, texts: string[]) {
  const placed: string[] = [];
  const steering = new ReplySteering(plan, {
    push: (token) => texts[token]!,
    tokenize: (text) => {
      placed.push(text);
      return [1000 + placed.length];
    },
  });
  const actions: (SteerAction | null)[] = texts.map((_, i) => steering.onToken(i));
  return {steering, actions, placed};
}

const reasoning = (mode: SteeringPlan["reasoning"]["mode"]) => ({mode, open: "<think>", close: "</think>"});
const schemaAnswer = (escape: {budget: number} | null): SteeringPlan["answer"] =>
  ({kind: "schema", grammar: SCHEMA, escape: escape && {budget: escape.budget, braceToken: BRACE}});

describe("JSON under a schema", () => {
  test("without thinking or tools the schema binds from the first token", () => {
    const {steering, actions} = steer({reasoning: reasoning("none"), answer: schemaAnswer(null), calls: null, parallel: true}, ["{", "}"]);
    assert.deepEqual(steering.initial, SCHEMA);
    assert.ok(actions.every((a) => a === null));
  });

  test("the reasoning block is free; the schema binds right after it closes, cutting a token that runs past", () => {
    const {steering, actions, placed} = steer({reasoning: reasoning("inside"), answer: schemaAnswer(null), calls: null, parallel: true},
      ["plan", " more", "</think>\n", "{"]);
    assert.equal(steering.initial, null);
    assert.deepEqual(actions.slice(0, 2), [null, null]);
    assert.deepEqual(actions[2], {replaceWith: [1001], bind: {grammar: SCHEMA}});
    assert.deepEqual(placed, ["</think>"]);
  });

  test("force-open: the reply must open the block first, then it is free", () => {
    const {steering, actions} = steer({reasoning: reasoning("force-open"), answer: schemaAnswer(null), calls: null, parallel: true},
      ["<th", "ink>", "hm", "</think>"]);
    assert.equal(steering.initial?.gbnf, 'root ::= "<think>"');
    assert.deepEqual(actions, [null, {bind: {grammar: null}}, null, {bind: {grammar: SCHEMA}}]);
  });
});

describe("tools under an object schema (SVC_SCHEMA_ESCAPE on)", () => {
  const tools = {tools: [{name: "f", parameters: {type: "object", properties: {a: {type: "string"}}}, strict: true, enforced: true, templateEntry: null}],
    choice: {kind: "auto" as const}, parallel: true};
  const plan = (budget: number): SteeringPlan => ({reasoning: reasoning("none"), answer: schemaAnswer({budget}), calls: createToolCallGrammars(HERMES_CALLS, tools), parallel: true});

  test("the preamble is free; the JSON starts at the first `{`, placed and accepted into the schema's grammar", () => {
    const {steering, actions} = steer(plan(100), ["Sure", ", here", ' {"a'], );
    assert.equal(steering.initial, null);
    assert.deepEqual(actions.slice(0, 2), [null, null]);
    assert.deepEqual(actions[2], {replaceWith: [BRACE], bind: {grammar: SCHEMA, accept: [BRACE]}});
    assert.equal(steering.jsonStarted, true);
  });

  test("the preamble is capped at half the budget, at most 1,024 tokens; then the JSON starts", () => {
    const words = Array.from({length: 10}, () => " word");
    const {actions} = steer(plan(12), words);
    assert.deepEqual(actions.slice(0, 5), [null, null, null, null, null]);
    assert.deepEqual(actions[5], {bind: {grammar: SCHEMA}}, "the 6th preamble token reaches half of 12");
    const long = new ReplySteering(plan(100_000), {push: () => " w", tokenize: () => []});
    let bound = -1;
    for (let i = 0; i < 2000 && bound < 0; i++) if (long.onToken(i)?.bind) bound = i + 1;
    assert.equal(bound, MAX_PREAMBLE_TOKENS);
  });

  test("a tool call may open instead: its grammar binds right after the opener", () => {
    const {actions, steering} = steer(plan(100), ["Let me call", " <tool_", "call>"]);
    assert.deepEqual(actions.slice(0, 2), [null, null]);
    assert.ok(actions[2]?.bind?.grammar, "the call's open phase binds");
    assert.equal(steering.jsonStarted, false);
  });
});

describe("thinking budget", () => {
  const budgeted = (mode: SteeringPlan["reasoning"]["mode"], budget: number): SteeringPlan =>
    ({reasoning: {...reasoning(mode), budget}, answer: {kind: "free"}, calls: null, parallel: true});

  test("inside the block: the token that reaches the budget is replaced by the closing marker; the answer is free", () => {
    const {steering, actions, placed} = steer(budgeted("inside", 3), ["a", " b", " c", " d"]);
    assert.deepEqual(actions.slice(0, 2), [null, null]);
    assert.deepEqual(actions[2], {replaceWith: [1001], bind: {grammar: null}});
    assert.deepEqual(placed, ["</think>"]);
    assert.equal(steering.budgetClosed, true);
    assert.equal(steering.reasoningTokens, 3);
    assert.equal(actions[3], null, "after the block the answer is not steered");
  });

  test("the opener written by the reply does not count; a block closed within budget is left alone", () => {
    const {steering, actions} = steer(budgeted("may-open", 3), ["<think>", "x", " y", "</think>", "ok"]);
    assert.ok(actions.every((a) => a === null || a.replaceWith === undefined), JSON.stringify(actions));
    assert.equal(steering.budgetClosed, false);
    assert.equal(steering.reasoningTokens, 3, "x, y and the closing token");
  });

  test("under a schema the JSON grammar binds right after the forced close", () => {
    const {actions} = steer({reasoning: {...reasoning("inside"), budget: 2}, answer: schemaAnswer(null), calls: null, parallel: true}, ["a", "b"]);
    assert.deepEqual(actions[1], {replaceWith: [1001], bind: {grammar: SCHEMA}});
  });
});

describe("a stop token before the required answer (onStop)", () => {
  const tools = {tools: [{name: "f", parameters: {type: "object", properties: {a: {type: "string"}}}, strict: true, enforced: true, templateEntry: null}],
    choice: {kind: "auto" as const}, parallel: true};
  const withTools = (mode: SteeringPlan["reasoning"]["mode"]): SteeringPlan =>
    ({reasoning: reasoning(mode), answer: schemaAnswer({budget: 100}), calls: createToolCallGrammars(HERMES_CALLS, tools), parallel: true});

  test("in the free preamble beside tools: the JSON opens in its place, as at a `{`", () => {
    const {steering} = steer(withTools("none"), ["Sure", ", one moment."]);
    assert.deepEqual(steering.onStop(0), {replaceWith: [BRACE], bind: {grammar: SCHEMA, accept: [BRACE]}});
    assert.equal(steering.jsonStarted, true);
    assert.equal(steering.stopOverruled, true);
    assert.equal(steering.onStop(0), null, "once the JSON is under way, its grammar decides when the reply may end");
  });

  test("inside the reasoning block with a schema answer: the block closes and the answer follows", () => {
    const {steering, placed} = steer({reasoning: reasoning("inside"), answer: schemaAnswer(null), calls: null, parallel: true}, ["plan"]);
    assert.deepEqual(steering.onStop(0), {replaceWith: [1001], bind: {grammar: SCHEMA}});
    assert.deepEqual(placed, ["</think>"]);
    assert.equal(steering.budgetClosed, false, "not the budget");
  });

  test("a free answer, or a schema answer once its JSON started, ends where the model stops", () => {
    const free = steer({reasoning: reasoning("inside"), answer: {kind: "free"}, calls: null, parallel: true}, ["plan"]).steering;
    assert.equal(free.onStop(0), null);
    assert.equal(free.stopOverruled, false);
    const json = steer(withTools("none"), ["Sure", ' {"a']).steering;
    assert.equal(json.onStop(0), null);
  });
});
