// Tools on the chat route: names, the choice, parallel_tool_calls, and which strict tools are enforced
// (the spec's "Strict tools" rules 5 and 6), with the unenforced ones logged and counted.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {decodeChat} from "../../../../src/api/dialects/chat/decode.ts";
import {MAX_STRICT_PARAMETERS, MAX_STRICT_TOOLS} from "../../../../src/api/fields/tools.ts";
import {SchemaCache} from "../../../../src/grammar/index.ts";
import {newCounters} from "../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";
import {apiErrorOf} from "../../../fixtures/api-error.ts";

const user = (content: string) => ({role: "user", content});

function context(over: {strictTools?: boolean} = {}) {
  return {requestId: "r", signal: new AbortController().signal, maxTokensCap: 1000, schemas: new SchemaCache(), grammarEnabled: true,
    strictTools: over.strictTools ?? true, logger: createMemoryLogger(), counters: newCounters()};
}

const fn = (name: string, parameters: object = {type: "object", properties: {a: {type: "string"}}, required: ["a"]}, strict?: boolean) =>
  ({type: "function", function: {name, parameters, ...(strict === undefined ? {} : {strict})}});

function decode(body: object, ctx = context()) {
  return decodeChat({messages: [user("hi")], ...body}, ctx).request.tools!;
}

const refused = (body: object) => apiErrorOf(() => decodeChat({messages: [user("hi")], ...body}, context()));

describe("tool definitions", () => {
  test("names: 1 to 64 of [a-zA-Z0-9_-], unique", () => {
    assert.equal(refused({tools: [fn("get weather")]}).param, "tools[0].function.name");
    assert.equal(refused({tools: [fn("x".repeat(65))]}).param, "tools[0].function.name");
    assert.doesNotThrow(() => decode({tools: [fn("x".repeat(64))]}));
    const dup = refused({tools: [fn("f"), fn("f")]});
    assert.equal(dup.param, "tools[1].function.name");
    assert.match(dup.message, /unique/);
  });

  test("shape: type function, a function object, parameters an object", () => {
    assert.equal(refused({tools: [{type: "custom", function: {name: "f"}}]}).param, "tools[0].type");
    assert.equal(refused({tools: [{type: "function"}]}).param, "tools[0].function");
    assert.equal(refused({tools: [fn("f", "nope" as never)]}).param, "tools[0].function.parameters");
    assert.equal(refused({tools: [{type: "function", function: {name: "f", strict: "yes"}}]}).param, "tools[0].function.strict");
  });

  test("tool_choice: auto, none, required, or a named tool of the request", () => {
    assert.deepEqual(decode({tools: [fn("f")]}).choice, {kind: "auto"});
    assert.deepEqual(decode({tools: [fn("f")], tool_choice: "required"}).choice, {kind: "required"});
    assert.deepEqual(decode({tools: [fn("f")], tool_choice: {type: "function", function: {name: "f"}}}).choice, {kind: "named", name: "f"});
    assert.equal(refused({tools: [fn("f")], tool_choice: {type: "function", function: {name: "g"}}}).param, "tool_choice.function.name");
    assert.equal(refused({tools: [fn("f")], tool_choice: "always"}).param, "tool_choice");
    assert.equal(refused({tool_choice: "required"}).param, "tool_choice");
  });

  test("parallel_tool_calls: true by default, false allows one call", () => {
    assert.equal(decode({tools: [fn("f")]}).parallel, true);
    assert.equal(decode({tools: [fn("f")], parallel_tool_calls: false}).parallel, false);
    assert.equal(refused({tools: [fn("f")], parallel_tool_calls: "no"}).param, "parallel_tool_calls");
  });
});

describe("strict tools: enforced or served unenforced (rule 5), SVC_STRICT_TOOLS=0 (rule 6)", () => {
  const props = (n: number) => Object.fromEntries(Array.from({length: n}, (_, i) => [`p${i}`, {type: "integer"}]));

  test("a strict tool with an enforceable schema is enforced; one without strict is not", () => {
    const ctx = context();
    const t = decode({tools: [fn("a", undefined, true), fn("b")]}, ctx).tools;
    assert.deepEqual(t.map((x) => [x.name, x.strict, x.enforced]), [["a", true, true], ["b", false, false]]);
    assert.equal(ctx.counters.strictToolsUnenforced, 0);
  });

  const unenforced = (tool: object, extra: object = {}) => {
    const ctx = context();
    const t = decodeChat({messages: [user("hi")], tools: [tool], ...extra}, ctx).request.tools!.tools[0]!;
    return {enforced: t.enforced, counted: ctx.counters.strictToolsUnenforced, log: ctx.logger.lines.join("\n")};
  };

  test(`exactly ${MAX_STRICT_PARAMETERS} parameters enforced; one more is served unenforced, logged and counted`, () => {
    assert.equal(unenforced(fn("f", {type: "object", properties: props(MAX_STRICT_PARAMETERS)}, true)).enforced, true);
    const over = unenforced(fn("f", {type: "object", properties: props(MAX_STRICT_PARAMETERS + 1)}, true));
    assert.deepEqual([over.enforced, over.counted], [false, 1]);
    assert.match(over.log, /strict tool served without enforcement/);
  });

  test("a refused keyword, or extra parameters allowed at the top level: unenforced", () => {
    const allOf = unenforced(fn("f", {type: "object", properties: {a: {allOf: [{type: "string"}]}}}, true));
    assert.deepEqual([allOf.enforced, allOf.counted], [false, 1]);
    assert.match(allOf.log, /allOf/);
    const open = unenforced(fn("f", {type: "object", properties: {a: {type: "string"}}, additionalProperties: true}, true));
    assert.deepEqual([open.enforced, open.counted], [false, 1]);
  });

  test("pattern and format are accepted in a tool schema (not enforced), the tool still is", () => {
    const t = unenforced(fn("f", {type: "object", properties: {a: {type: "string", pattern: "^x", format: "email"}}}, true));
    assert.deepEqual([t.enforced, t.counted], [true, 0]);
  });

  test(`logprobs, or more than ${MAX_STRICT_TOOLS} tools: every strict tool unenforced`, () => {
    const lp = unenforced(fn("f", undefined, true), {logprobs: true, top_logprobs: 1, max_tokens: 1, temperature: 0});
    assert.deepEqual([lp.enforced, lp.counted], [false, 1]);
    const many = (n: number) => Array.from({length: n}, (_, i) => fn(`t${i}`, undefined, true));
    const ctx = context();
    const at = decodeChat({messages: [user("hi")], tools: many(MAX_STRICT_TOOLS)}, ctx).request.tools!.tools;
    assert.ok(at.every((t) => t.enforced));
    const over = decodeChat({messages: [user("hi")], tools: many(MAX_STRICT_TOOLS + 1)}, ctx).request.tools!.tools;
    assert.ok(over.every((t) => !t.enforced));
    assert.equal(ctx.counters.strictToolsUnenforced, MAX_STRICT_TOOLS + 1);
  });

  test("SVC_STRICT_TOOLS=0 accepts strict without enforcing it, and does not count it as a failure", () => {
    const ctx = context({strictTools: false});
    const t = decode({tools: [fn("f", undefined, true)]}, ctx).tools[0]!;
    assert.deepEqual([t.strict, t.enforced, ctx.counters.strictToolsUnenforced], [true, false, 0]);
  });
});
