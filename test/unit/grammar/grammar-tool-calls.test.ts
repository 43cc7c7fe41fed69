// Strict tool calls, one phase grammar at a time: every phase grammar loads in the engine's own grammar
// parser (no model needed), accepts and refuses whole texts as the spec says, and ends exactly at its
// boundary: no proper prefix of an accepted text is complete, nothing may follow one, and phaseBoundary
// answers null on every prefix and the right boundary on the whole text.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, type Llama, type LlamaGrammar} from "node-llama-cpp";
import {compileSchema, SchemaError} from "../../../src/grammar/index.ts";
import {afterCallGrammar, argumentGrammar, MAX_STRICT_PARAMETERS, openGrammar, phaseBoundary, strictEligibility, xmlRawParameters, type Boundary, type CallSyntax, type PhaseGrammar} from "../../../src/syntax/index.ts";
import {grammarAcceptsText} from "../../../src/engine/llama/internals.ts";
import {FAMILIES} from "../../../src/templates/families/index.ts";
import {GENERIC_CALLS} from "../../../src/templates/families/generic.ts";
import {HERMES_CALLS} from "../../../src/templates/families/hermes.ts";
import {QWEN_XML_CALLS} from "../../../src/templates/families/qwen3-coder.ts";

// The three syntaxes these tests were written for, now the families' data.
const QWEN = QWEN_XML_CALLS;
const HERMES = HERMES_CALLS;
const GENERIC = GENERIC_CALLS;

let llama: Llama;
before(async () => {
  llama = await getLlama({gpu: false, build: "never"});
});
after(async () => {
  await llama?.dispose();
});

const matches = (grammar: LlamaGrammar, text: string) => grammarAcceptsText(grammar, text);

/** Loads `g`; each accepted text is a whole phase ending at its boundary `want`; each refused text is not. */
async function check(syntax: CallSyntax, g: PhaseGrammar, accept: [string, Boundary][], refuse: string[]): Promise<void> {
  const grammar = await llama.createGrammar({grammar: g.gbnf});
  for (const [text, want] of accept) {
    assert.ok(matches(grammar, text), `accepts ${JSON.stringify(text)}`);
    assert.deepEqual(phaseBoundary(syntax, g.phase, text), want, `boundary of ${JSON.stringify(text)}`);
    for (let i = 0; i < text.length; i++) {
      const prefix = text.slice(0, i);
      assert.equal(phaseBoundary(syntax, g.phase, prefix), null, `no boundary yet in ${JSON.stringify(prefix)}`);
      assert.ok(!matches(grammar, prefix), `the prefix ${JSON.stringify(prefix)} is not a complete phase`);
    }
    for (const more of [" ", "\n", "x", ",", "}", ">"]) assert.ok(!matches(grammar, text + more), `nothing follows ${JSON.stringify(text)}`);
  }
  for (const text of refuse) assert.ok(!matches(grammar, text), `refuses ${JSON.stringify(text)}`);
}

const NAMES = ["get_weather", "search"];
const WEATHER = {
  type: "object",
  $defs: {
    unit: {type: "string", enum: ["celsius", "fahrenheit"]},
    place: {type: "object", properties: {lat: {type: "number"}, lon: {type: "number"}}, required: ["lat", "lon"], additionalProperties: false},
  },
  properties: {
    city: {type: "string", pattern: "^[A-Z]", description: "pattern: accepted, not enforced"},
    days: {type: "integer"},
    unit: {$ref: "#/$defs/unit"},
    at: {$ref: "#/$defs/place"},
    code: {type: "string", minLength: 2, maxLength: 4},
    when: {type: "string", format: "date"},
    flags: {type: "array", items: {type: "boolean"}, maxItems: 2},
  },
  required: ["city", "days"],
};
const ALL = Object.keys(WEATHER.properties);
const weather = {name: "get_weather", parameters: WEATHER, strict: true};
const loose = {name: "search", parameters: {type: "object", properties: {q: {type: "string"}}}, strict: false};
/** A recursive schema: `$ref: "#"` is the whole (closed) parameters object. */
const TREE = {type: "object", properties: {label: {type: "string"}, children: {type: "array", items: {$ref: "#"}}}, required: ["label"]};
const tree = {name: "tree", parameters: TREE, strict: true};

const named = (name: string): Boundary => ({kind: "named", name});
const param = (name: string): Boundary => ({kind: "parameter", name});
const closed = (name?: string): Boundary => (name === undefined ? {kind: "closed"} : {kind: "closed", name});

describe("qwen-xml", () => {
  const xml = (p: string, v: string) => `<parameter=${p}>\n${v}\n</parameter>`;

  test("open: from the reply's start, and after a freely written <tool_call>", async () => {
    await check(QWEN, openGrammar(QWEN, NAMES, {fromReplyStart: true}), [
      ["<tool_call>\n<function=get_weather>", named("get_weather")],
      [" <tool_call>\n<function=search>", named("search")],
    ], ["<tool_call>\n<function=other>", "<tool_call><function=search>", "<function=search>", "<tool_call>\n<function=search>\n"]);
    await check(QWEN, openGrammar(QWEN, NAMES, {fromReplyStart: false}), [
      ["\n<function=search>", named("search")],
      ["<function=get_weather>", named("get_weather")],
    ], ["<tool_call>\n<function=search>", "\n<function=get>", "\n\n<function=search>"]);
  });

  test("first argument: any declared parameter, values per schema, no close while required ones are missing", async () => {
    const g = argumentGrammar(QWEN, weather, []);
    await check(QWEN, g, [
      ["\n" + xml("city", "Paris"), param("city")],
      [xml("city", "paris, pattern not enforced"), param("city")],
      [xml("city", "two\nlines"), param("city")],
      [xml("city", ""), param("city")],
      [xml("city", "a </parameter> mid-line is text"), param("city")],
      [xml("city", "x</parameter>"), param("city")],
      [xml("city", "</parameter"), param("city")],
      [xml("days", "3"), param("days")],
      [xml("days", "-12"), param("days")],
      [xml("unit", "celsius"), param("unit")],
      [xml("at", '{"lat": 1.5, "lon": -2}'), param("at")],
      [xml("code", "ab"), param("code")],
      [xml("code", "a<b>"), param("code")],
      [xml("when", "not a date: format is not enforced"), param("when")],
      [xml("flags", "[true, false]"), param("flags")],
    ], [
      "\n</function>\n</tool_call>", // city and days are required
      xml("bogus", "1"), // undeclared
      xml("city", "a\n</parameter>\nb"), // the line </parameter> ends the value: nothing may follow
      xml("city", "a\n</parameter>b"), // a line starting with the closer is not allowed either
      xml("city", "</parameter> at the start"),
      xml("days", "3.5"), xml("days", '"3"'), xml("days", " 3"),
      xml("unit", "kelvin"), xml("unit", '"celsius"'),
      xml("at", '{"lat": 1}'), xml("at", '{"lat": 1, "lon": 2, "alt": 3}'),
      xml("code", "a"), xml("code", "abcde"), xml("code", "a\nb"),
      xml("flags", "[true, false, true]"), xml("flags", "[1]"),
    ]);
  });

  test("a written parameter cannot come again; the close needs every required one", async () => {
    await check(QWEN, argumentGrammar(QWEN, weather, ["city"]), [[xml("days", "1"), param("days")]],
      [xml("city", "Paris"), "</function>\n</tool_call>"]);
    await check(QWEN, argumentGrammar(QWEN, weather, ["days", "city"]), [
      ["\n</function>\n</tool_call>", closed()],
      ["</function></tool_call>", closed()],
      [xml("unit", "fahrenheit"), param("unit")],
    ], [xml("days", "2"), "</function>\n\n</tool_call>", "</tool_call>"]);
    await check(QWEN, argumentGrammar(QWEN, weather, ALL), [["\n</function>\n</tool_call>", closed()]], [xml("city", "x")]);
  });

  test("$ref to the root: nested objects are the closed parameters object", async () => {
    await check(QWEN, argumentGrammar(QWEN, tree, ["label"]), [
      [xml("children", '[{"label": "a", "children": [{"label": "b"}]}]'), param("children")],
      ["</function>\n</tool_call>", closed()],
    ], [xml("children", '[{"children": []}]'), xml("children", '[{"label": "a", "x": 1}]')]);
  });

  test("a non-strict tool: any parameter name, any text", async () => {
    await check(QWEN, argumentGrammar(QWEN, loose, []), [
      [xml("anything.goes-1_x", "free\ntext"), param("anything.goes-1_x")],
      ["</function>\n</tool_call>", closed()],
    ], [xml("two words", "x"), xml("q", "a\n</parameter>x")]);
  });

  test("raw parameters: the ones whose schema allows only strings; a listed value that cannot be raw is left out", async () => {
    assert.deepEqual(xmlRawParameters(WEATHER), ["city", "unit", "code", "when"]);
    const picky = {name: "p", parameters: {type: "object", properties: {s: {enum: ["ok", "no\n</parameter>"]}, n: {type: ["string", "null"]}}}, strict: true};
    await check(QWEN, argumentGrammar(QWEN, picky, []), [[xml("s", "ok"), param("s")], [xml("n", '"json"'), param("n")], [xml("n", "null"), param("n")]],
      [xml("s", "no\n</parameter>"), xml("n", "raw")]);
  });

  test("rule names never collide: $defs named like the phase rules and the primitives", async () => {
    const clash = {
      type: "object",
      $defs: {"xml-line": {type: "integer"}, "tool-name": {type: "boolean"}, "arg-a": {type: "array", items: {type: "null"}}, ws: {enum: [1]}, root: {type: "number"}},
      properties: {a: {$ref: "#/$defs/xml-line"}, b: {$ref: "#/$defs/tool-name"}, c: {$ref: "#/$defs/arg-a"}, d: {$ref: "#/$defs/ws"}, e: {$ref: "#/$defs/root"}, f: {type: "string"}},
    };
    const t = {name: "c", parameters: clash, strict: true};
    await check(QWEN, argumentGrammar(QWEN, t, []), [[xml("a", "7"), param("a")], [xml("c", "[null]"), param("c")], [xml("d", "1"), param("d")], [xml("f", "long enough to pass the head rule"), param("f")]],
      [xml("a", "true"), xml("d", "2")]);
    await check(HERMES, argumentGrammar(HERMES, t, ["a"]), [['"b": false}}</tool_call>', closed("b")], ['"e": 1.5,', param("e")]], ['"b": 1,']);
  });
});

describe("hermes", () => {
  test("open: up to and including the colon after \"arguments\"", async () => {
    await check(HERMES, openGrammar(HERMES, NAMES, {fromReplyStart: true}), [
      ['<tool_call>\n{"name": "get_weather", "arguments":', named("get_weather")],
      ['\n<tool_call>{"name":"search","arguments" :', named("search")],
    ], ['<tool_call>\n{"name": "other", "arguments":', '{"name": "search", "arguments":', '<tool_call>\n{"arguments": {}, "name": "search"}']);
    await check(HERMES, openGrammar(HERMES, NAMES, {fromReplyStart: false}), [
      ['\n{"name": "search", "arguments":', named("search")],
    ], ['<tool_call>\n{"name": "search", "arguments":']);
  });

  test("first argument: `{`, one pair, then `,` (more to write) or the close (all required written)", async () => {
    await check(HERMES, argumentGrammar(HERMES, weather, []), [
      [' {"city": "Paris",', param("city")],
      ['{"city": "a\\"},b" ,', param("city")],
      ['{\n"at": {"lat": 1, "lon": 2},', param("at")],
      ['{"days": 3,', param("days")],
      ['{"flags": [true, false],', param("flags")],
      ['{"code": "abcd",', param("code")],
    ], [
      "{}}\n</tool_call>", '{"city": "Paris"}}\n</tool_call>', '{"bogus": 1,', '"city": "Paris",',
      '{"days": 3.5,', '{"days": "3",', '{"unit": "kelvin",', '{"at": {"lat": 1},', '{"code": "a",', '{"code": "abcde",',
      '{"flags": [true, true, true],',
    ]);
  });

  test("later arguments: no `{`, no repeat, the close once days and city are written", async () => {
    await check(HERMES, argumentGrammar(HERMES, weather, ["city"]), [
      [' "days": 3}}\n</tool_call>', closed("days")],
      ['"days": 3 } }</tool_call>', closed("days")],
      ['"days": 3,', param("days")],
    ], ['"city": "x",', '{"days": 3,', '"unit": "celsius"}}\n</tool_call>']);
    const lastOne = ALL.filter((p) => p !== "flags");
    await check(HERMES, argumentGrammar(HERMES, weather, lastOne), [['"flags": [true]}}\n</tool_call>', closed("flags")]],
      ['"flags": [true],', '"flags": [true]}']);
  });

  test("no parameters at all; escaped parameter names; a non-strict tool's whole object in one phase", async () => {
    await check(HERMES, argumentGrammar(HERMES, {name: "now", parameters: {type: "object", properties: {}}, strict: true}, []), [
      ["{}}\n</tool_call>", closed()],
      [" { } }</tool_call>", closed()],
    ], ['{"x": 1}}</tool_call>']);
    const odd = {name: "odd", parameters: {type: "object", properties: {'we"ird': {type: "boolean"}}, required: ['we"ird']}, strict: true};
    await check(HERMES, argumentGrammar(HERMES, odd, []), [['{"we\\"ird": true}}</tool_call>', closed('we"ird')]], ['{"we\\"ird": true,']);
    await check(HERMES, argumentGrammar(HERMES, loose, []), [
      ['{"anything": [1, {"x": "}"}], "q": null}}\n</tool_call>', closed()],
      ["{}}</tool_call>", closed()],
    ], ['{"a": 1}', "[]}</tool_call>"]);
  });
});

describe("generic", () => {
  test("open: the reply's opening, or another call object's", async () => {
    await check(GENERIC, openGrammar(GENERIC, NAMES, {fromReplyStart: true}), [
      ['{"tool_calls": [{"name": "get_weather", "arguments":', named("get_weather")],
      ['\n{ "tool_calls" : [ {"name":"search", "arguments":', named("search")],
    ], ['{"tool_calls": [{"name": "nope", "arguments":', '{"name": "search", "arguments":']);
    await check(GENERIC, openGrammar(GENERIC, NAMES, {fromReplyStart: false}), [[' {"name": "search", "arguments":', named("search")]], ['{"tool_calls": [{"name": "search", "arguments":']);
  });

  test("arguments close the call object too", async () => {
    await check(GENERIC, argumentGrammar(GENERIC, weather, ["city"]), [
      [' "days": 3}}', closed("days")],
      ['"days": 3,', param("days")],
    ], ['"days": 3}}\n</tool_call>', '"days": 3}', '"city": "x"}}']);
    await check(GENERIC, argumentGrammar(GENERIC, tree, []), [['{"label": "root",', param("label")], ['{"label": "root"}}', closed("label")]], [
      '{"children": [{"label": "leaf", "x": 1}],', '{"children": [{"children": []}],', '{"label": "root", "children": []}}',
    ]);
    await check(GENERIC, argumentGrammar(GENERIC, tree, ["label"]), [['"children": [{"label": "leaf"}]}}', closed("children")]], []);
    await check(GENERIC, argumentGrammar(GENERIC, loose, []), [['{"q": "x"}}', closed()]], ['{"q": "x"}']);
  });

  test("after a call: another one (naming its tool) or the end of the reply", async () => {
    await check(GENERIC, afterCallGrammar(GENERIC, {more: true, names: NAMES}), [
      [', {"name": "search", "arguments":', {kind: "more", name: "search"}],
      ["]}", {kind: "end"}],
      ["\n] }", {kind: "end"}],
    ], [', {"name": "nope", "arguments":', ",", "}"]);
    await check(GENERIC, afterCallGrammar(GENERIC, {more: false, names: NAMES}), [["]}", {kind: "end"}]], [', {"name": "search", "arguments":']);
    assert.throws(() => afterCallGrammar(HERMES, {more: true, names: NAMES}), TypeError);
  });
});

describe("strict eligibility", () => {
  const props = (n: number) => Object.fromEntries(Array.from({length: n}, (_, i) => [`p${i}`, {type: "integer"}]));

  test("at most 32 parameters", () => {
    assert.equal(MAX_STRICT_PARAMETERS, 32);
    assert.deepEqual(strictEligibility({type: "object", properties: props(32), required: ["p0", "p31"]}, HERMES), {enforce: true});
    const over = strictEligibility({type: "object", properties: props(33)});
    assert.equal(over.enforce, false);
    assert.match((over as {reason: string}).reason, /33 parameters .*at most 32/);
  });

  test("pattern and format are accepted; other refused keywords name themselves and their path", () => {
    assert.deepEqual(strictEligibility(WEATHER), {enforce: true});
    for (const syntax of [QWEN, HERMES, GENERIC]) assert.deepEqual(strictEligibility(WEATHER, syntax), {enforce: true});
    const allOf = strictEligibility({type: "object", properties: {x: {allOf: [{type: "string"}]}}});
    assert.deepEqual(allOf, {enforce: false, reason: 'parameters/properties/x/allOf: the keyword "allOf" is not supported in a strict tool\'s parameters'});
    assert.match((strictEligibility({type: "object", properties: {}, minProperties: 1}) as {reason: string}).reason, /"minProperties"/);
  });

  test("extra parameters at the top level: additionalProperties true or a schema (absent or false is fine)", () => {
    for (const extra of [true, {}, {type: "string"}]) {
      const r = strictEligibility({type: "object", properties: {a: {type: "string"}}, additionalProperties: extra});
      assert.equal(r.enforce, false);
      assert.match((r as {reason: string}).reason, /additionalProperties/);
    }
    assert.deepEqual(strictEligibility({type: "object", properties: {a: {type: "string"}}, additionalProperties: false}), {enforce: true});
    assert.deepEqual(strictEligibility({type: "object", properties: {a: {type: "object"}}}), {enforce: true}, "nested objects may stay open");
  });

  test("not an object schema, a split top level, a schema that does not compile", () => {
    for (const p of [{type: "string"}, [], null, true, {}, {anyOf: [{type: "object"}]}, {type: "object", $ref: "#/$defs/x", $defs: {x: {}}}]) {
      const r = strictEligibility(p);
      assert.equal(r.enforce, false, JSON.stringify(p));
    }
    assert.match((strictEligibility({type: "string"}) as {reason: string}).reason, /not an object schema/);
    assert.match((strictEligibility({type: "object", properties: {}, required: ["x"]}) as {reason: string}).reason, /required/);
    assert.match((strictEligibility(WEATHER, HERMES, {maxRules: 5}) as {reason: string}).reason, /more than 5 rules/);
    const gt = {type: "object", properties: {"a>b": {type: "string"}}};
    assert.equal(strictEligibility(gt, QWEN).enforce, false, "a name with > cannot be a qwen-xml parameter");
    assert.deepEqual(strictEligibility(gt, HERMES), {enforce: true});
  });

  test("with a family's syntax, parameters are counted and compiled the way it writes them, shape by shape", () => {
    const syntax = (id: string) => FAMILIES.find((f) => f.id === id)!.calls!;
    const verdicts = (parameters: unknown, compile?: {maxRules: number}) => Object.fromEntries(FAMILIES.filter((f) => f.calls)
      .map((f) => [f.id, strictEligibility(parameters, f.calls!, compile).enforce]));
    const only = (refusedBy: string[]) => Object.fromEntries(FAMILIES.filter((f) => f.calls).map((f) => [f.id, !refusedBy.includes(f.id)]));
    const reason = (v: ReturnType<typeof strictEligibility>) => (v as {reason: string}).reason;
    // A parameter name is a JSON string in the json, named and harmony shapes (anything goes), bare markup in the xml shape
    // (its name-ending character may not appear: ">" in `<parameter=NAME>`), a bare key in Gemma's notation, a Python
    // identifier in the pythonic shape (LFM2) and an element name in the tagged shape (MiniMax M3).
    const gt = {type: "object", properties: {"a>b": {type: "string"}}};
    assert.deepEqual(verdicts(gt), only(["gemma4", "seed-oss", "qwen3-coder", "lfm2", "minimax-m3"]));
    assert.match(reason(strictEligibility(gt, syntax("lfm2"))), /the parameter name "a>b" cannot be written in a Python-style tool call/);
    assert.deepEqual(verdicts({type: "object", properties: {"2nd": {type: "string"}}}).lfm2, false);
    assert.deepEqual(verdicts({type: "object", properties: {_second_2: {type: "string"}}}).lfm2, true);
    assert.match(reason(strictEligibility(gt, syntax("qwen3-coder"))),
      /the parameter name "a>b" cannot be written in this tool-call syntax \(empty, or it holds ">" or a line break\)/);
    // Nested keys are JSON everywhere but in Gemma's notation and the tagged shape, which writes nested values as elements
    // named after their keys (MiniMax M3); there a value that may be null (the template leaves nulls out) cannot be written.
    const nested = {type: "object", properties: {o: {type: "object", properties: {"two words": {type: "string"}}, additionalProperties: false}}};
    assert.deepEqual(verdicts(nested), only(["gemma4", "minimax-m3"]));
    assert.match(reason(strictEligibility(nested, syntax("minimax-m3"))), /the parameter name "two words" cannot be written as an element name/);
    const elements = {type: "object", properties: {o: {type: "object", properties: {unit: {type: "string"}, n: {type: "integer"}}},
      l: {type: "array", items: {type: "boolean"}}, e: {enum: [1, 2]}}};
    assert.deepEqual(verdicts(elements)["minimax-m3"], true);
    assert.match(reason(strictEligibility({type: "object", properties: {n: {type: ["integer", "null"]}}}, syntax("minimax-m3"))),
      /the parameter "n" is a value that may be null/);
    // A string parameter is raw text in the xml shape: a listed value holding the value end cannot be written there (left
    // out when another can be, refused when none can); everywhere else it is a JSON string.
    const ends = {type: "object", properties: {a: {type: "string", enum: ["x</parameter>", "y</parameter>"]}}};
    assert.deepEqual(verdicts(ends), only(["minimax-m2", "seed-oss"]));
    assert.match(reason(strictEligibility(ends, syntax("seed-oss"))), /properties\/a.*no listed value can be written as raw text/);
    assert.deepEqual(verdicts({type: "object", properties: {a: {type: "string", enum: ["ok", "y</parameter>"]}}}), only([]));
    // Budgets count the syntax's own phase grammar, not the arguments as one JSON object (which no syntax is held to):
    // DeepSeek's DSML writes each parameter with more markup than Hermes' JSON.
    const three = {type: "object", properties: {a: {type: "string", maxLength: 64}, b: {type: "string", enum: ["x", "y"]}, c: {type: "string"}},
      required: ["a"]};
    assert.deepEqual(strictEligibility(three, undefined, {maxRules: 10}), {enforce: true});
    assert.deepEqual(strictEligibility(three, syntax("hermes"), {maxRules: 10}), {enforce: true});
    assert.match(reason(strictEligibility(three, syntax("deepseek-v3.2"), {maxRules: 10})), /more than 10 rules/);
    // Refused keywords and the parameter count are the same in every shape, with the same reason.
    const allOf = {type: "object", properties: {x: {allOf: [{type: "string"}]}}};
    for (const f of FAMILIES.filter((x) => x.calls)) {
      assert.deepEqual(strictEligibility(allOf, f.calls!), strictEligibility(allOf), f.id);
      const many = {type: "object", properties: props(MAX_STRICT_PARAMETERS + 1)};
      assert.deepEqual(strictEligibility(many, f.calls!), strictEligibility(many), f.id);
      assert.deepEqual(strictEligibility({type: "object", properties: props(MAX_STRICT_PARAMETERS)}, f.calls!), {enforce: true}, f.id);
    }
  });

  test("only a request's schema is timed: the server's own phases compile on a budget of 0 ms, a strict tool's does not", () => {
    const none = {maxMs: 0};
    for (const f of FAMILIES.filter((x) => x.calls)) {
      const s = f.calls!;
      assert.ok(openGrammar(s, ["get_weather"], {fromReplyStart: true}, none).gbnf.length > 0, f.id);
      assert.ok(argumentGrammar(s, {name: "get_weather", parameters: {type: "object"}, strict: false}, [], none).gbnf.length > 0, f.id);
    }
    assert.ok(afterCallGrammar(GENERIC_CALLS, {more: true, names: ["a"]}, none).gbnf.length > 0);
    // A strict tool's schema comes with the request: its budget holds (a schema big enough to pass 0 ms).
    const big = {type: "object", properties: Object.fromEntries(Array.from({length: 30}, (_, i) => [`p${i}`, {type: "string", enum: ["a", "b", "c"]}]))};
    assert.throws(() => argumentGrammar(HERMES_CALLS, {name: "t", parameters: big, strict: true}, [], none), /compiling took longer than 0 ms/);
  });

  test("argumentGrammar refuses what eligibility refuses; written names must be declared", () => {
    assert.throws(() => argumentGrammar(HERMES, {name: "t", parameters: {type: "object", additionalProperties: true}, strict: true}, []), SchemaError);
    assert.throws(() => argumentGrammar(HERMES, {name: "t", parameters: {type: "object", properties: {x: {not: {}}}}, strict: true}, []), SchemaError);
    assert.throws(() => argumentGrammar(HERMES, weather, ["nope"]), TypeError);
    assert.throws(() => openGrammar(HERMES, ["bad name"], {fromReplyStart: true}), TypeError);
    assert.throws(() => argumentGrammar(HERMES, weather, [], {maxGrammarBytes: 100}), SchemaError);
  });
});

describe("tool-schema compile mode and keys", () => {
  test("toolSchema: pattern/format accepted, the top level closed, nested objects as before; the default unchanged", async () => {
    const schema = {type: "object", properties: {a: {type: "string", format: "email"}, o: {type: "object"}}};
    assert.throws(() => compileSchema(schema), SchemaError);
    const grammar = await llama.createGrammar({grammar: compileSchema(schema, {toolSchema: true}).gbnf});
    assert.ok(matches(grammar, '{"a":"x","o":{"any":1}}'));
    assert.ok(!matches(grammar, '{"a":"x","b":1}'));
    const open = await llama.createGrammar({grammar: compileSchema({type: "object", properties: {a: {type: "string"}}}).gbnf});
    assert.ok(matches(open, '{"a":"x","b":1}'));
  });

  test("keys: stable over the order of names and written parameters; cached", () => {
    const a = argumentGrammar(HERMES, weather, ["days", "city"]);
    assert.equal(a, argumentGrammar(HERMES, weather, ["city", "days"]));
    assert.match(a.key, /^[0-9a-f]{64}$/);
    assert.notEqual(a.key, argumentGrammar(HERMES, weather, ["city"]).key);
    assert.notEqual(a.key, argumentGrammar(GENERIC, weather, ["days", "city"]).key);
    assert.equal(openGrammar(QWEN, ["b", "a"], {fromReplyStart: true}).key, openGrammar(QWEN, ["a", "b", "a"], {fromReplyStart: true}).key);
  });
});
