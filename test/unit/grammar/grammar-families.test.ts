// Strict tool calls for every model family's call syntax: the canonical text of one call (two parameters,
// a string and an integer) and of two calls in one reply is cut into phases the way the steering cuts it
// (phaseBoundary, character by character), and each phase grammar, loaded in llama.cpp's own grammar parser,
// accepts exactly its slice: the slice is complete, no proper prefix is. The boundaries found are the ones
// the call's structure says. A strict phase refuses an undeclared parameter and a value of the wrong type.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, type Llama, type LlamaGrammar} from "node-llama-cpp";
import type {CallSyntax} from "../../../src/core/call-syntax.ts";
import {grammarAcceptsText} from "../../../src/engine/llama/internals.ts";
import {afterCallGrammar, argumentGrammar, callOpeners, hasAfterPhase, openGrammar, phaseBoundary, strictEligibility, type Boundary, type PhaseGrammar, type ToolSpec} from "../../../src/syntax/index.ts";
import {ReplySteering, type SteeringPlan} from "../../../src/pipeline/steering.ts";
import {createToolCallGrammars} from "../../../src/pipeline/tool-call-grammars.ts";
import {FAMILIES} from "../../../src/templates/families/index.ts";
import {GENERIC_CALLS} from "../../../src/templates/families/generic.ts";
import {drive, GEMMA_QUOTE as Q, render, type Call, type Slice} from "../../fixtures/grammar/call-phases.ts";

let llama: Llama;
before(async () => {
  llama = await getLlama({gpu: false, build: "never"});
});
after(async () => {
  await llama?.dispose();
});

const loaded = new Map<string, Promise<LlamaGrammar>>();
function load(g: PhaseGrammar): Promise<LlamaGrammar> {
  let p = loaded.get(g.key);
  if (p === undefined) loaded.set(g.key, (p = llama.createGrammar({grammar: g.gbnf})));
  return p;
}

const PARAMS = (s: string, n: string) => ({type: "object", properties: {[s]: {type: "string"}, [n]: {type: "integer"}}, required: [s, n]});
const TOOLS: ToolSpec[] = [
  {name: "get_weather", parameters: PARAMS("city", "days"), strict: true},
  {name: "search", parameters: PARAMS("query", "limit"), strict: true},
];
const NAMES = TOOLS.map((t) => t.name);
const ONE: Call[] = [{name: "get_weather", args: [["city", "Paris"], ["days", 3]]}];
const TWO: Call[] = [...ONE, {name: "search", args: [["query", "rain in Rome"], ["limit", 5]]}];

/** The boundaries the calls' structure implies. */
function expected(s: CallSyntax, calls: Call[], strict: boolean): (Boundary | null)[] {
  const out: (Boundary | null)[] = [];
  const after = hasAfterPhase(s);
  // Recipient messages hold one call each: every call opens in free text and its section ends after it.
  const ownMessage = s.shape === "recipients" && s.body !== "json";
  calls.forEach((c, i) => {
    out.push(i > 0 && after && !ownMessage ? {kind: "more", name: c.name} : {kind: "named", name: c.name});
    // One parameter per phase, and the close alone, in the markup shapes (strict or not).
    if (s.shape === "xml" || s.shape === "tagged" || ownMessage) {
      for (const [k] of c.args) out.push({kind: "parameter", name: k});
      out.push({kind: "closed"});
      // The call's block ends with its message: free text (the next message) follows.
      if (ownMessage) out.push({kind: "text"});
    } else if (strict) {
      for (const [k] of c.args.slice(0, -1)) out.push({kind: "parameter", name: k});
      out.push({kind: "closed", name: c.args[c.args.length - 1]![0]});
    } else out.push({kind: "closed"});
  });
  // Mistral's calls (and Solar Open's section) end with the reply: its after phase ends without a boundary.
  if (after && !ownMessage) out.push(endsWithReply(s) ? null : {kind: "end"});
  return out;
}

/** Mistral, Solar Open: after a call, the empty text is a complete after phase too (the reply may end there). */
const endsWithReply = (s: CallSyntax) => s.shape === "named" && (s.section === null || s.section.endsReply === true);
const endsEmpty = (s: CallSyntax, g: PhaseGrammar) => g.phase.kind === "after" && endsWithReply(s);

async function checkSlices(s: CallSyntax, slices: Slice[]): Promise<void> {
  for (const [i, {grammar, text, boundary}] of slices.entries()) {
    const g = await load(grammar);
    assert.ok(grammarAcceptsText(g, text), `phase ${i} accepts ${JSON.stringify(text)}`);
    for (let k = endsEmpty(s, grammar) ? 1 : 0; k < text.length; k++) {
      assert.ok(!grammarAcceptsText(g, text.slice(0, k)), `phase ${i}: ${JSON.stringify(text.slice(0, k))} is not complete`);
    }
    if (boundary !== null) assert.ok(!grammarAcceptsText(g, text + " "), `phase ${i}: nothing follows ${JSON.stringify(text)}`);
  }
}

/** The syntaxes under test: every family's, and the generic form. */
const SYNTAXES: {id: string; syntax: CallSyntax; parallel: boolean}[] = [
  ...FAMILIES.filter((f) => f.calls !== null).map((f) => ({id: f.id, syntax: f.calls!, parallel: f.parallelCalls})),
  {id: "generic form", syntax: GENERIC_CALLS, parallel: true},
];

/** The text of a value of the wrong type for an integer parameter, in the shape's notation. */
const wrongInteger = (s: CallSyntax) => (s.shape === "xml" || s.shape === "tagged" || (s.shape === "recipients" && s.body !== "json") ? "three" : s.shape === "custom" && s.kind === "gemma4" ? `${Q}3${Q}` : '"3"');

describe("every family's call syntax", () => {
  for (const {id, syntax, parallel} of SYNTAXES) {
    describe(id, () => {
      test("one call from the reply's start: each phase accepts exactly its slice", async () => {
        const text = render(syntax, ONE);
        const slices = drive(syntax, text, TOOLS, true);
        assert.equal(slices.map((x) => x.text).join(""), text, "the phases cover the text");
        assert.deepEqual(slices.map((x) => x.boundary), expected(syntax, ONE, true));
        await checkSlices(syntax, slices);
      });

      // Syntaxes whose calls can only start the reply (Llama 3, the generic form) have no free-text case.
      if (callOpeners(syntax).length > 0) test("one call after free text (opened by an opener)", async () => {
        const text = "Let me check that.\n" + render(syntax, ONE);
        const slices = drive(syntax, text, TOOLS, false);
        assert.deepEqual(slices.map((x) => x.boundary), expected(syntax, ONE, true));
        await checkSlices(syntax, slices);
      });

      // Families that write one call per reply (Llama 3, gpt-oss) have no two-call case.
      if (parallel) test("two calls in one reply", async () => {
        const text = render(syntax, TWO);
        const slices = drive(syntax, text, TOOLS, true);
        assert.deepEqual(slices.map((x) => x.boundary), expected(syntax, TWO, true));
        await checkSlices(syntax, slices);
      });

      test("a non-strict tool: the name is enforced, the arguments are any", async () => {
        const loose = TOOLS.map((t) => ({...t, strict: false}));
        const slices = drive(syntax, render(syntax, ONE), loose, true);
        assert.deepEqual(slices.map((x) => x.boundary), expected(syntax, ONE, false));
        await checkSlices(syntax, slices);
        const open = await load(slices[0]!.grammar);
        assert.ok(!grammarAcceptsText(open, slices[0]!.text.replace("get_weather", "get_other")), "another name is refused");
      });

      test("a strict phase refuses an undeclared parameter and a wrong type", async () => {
        assert.deepEqual(strictEligibility(TOOLS[0]!.parameters, syntax), {enforce: true});
        const slices = drive(syntax, render(syntax, ONE), TOOLS, true);
        const city = slices[1]!;
        const days = slices[2]!;
        assert.ok(city.text.includes("city") && days.text.includes("3"), "the slices are the two parameters");
        const g1 = await load(city.grammar);
        const g2 = await load(days.grammar);
        assert.ok(!grammarAcceptsText(g1, city.text.replace("city", "bogus")), "undeclared parameter");
        assert.ok(!grammarAcceptsText(g2, days.text.replace("3", wrongInteger(syntax))), "a string for an integer");
        assert.ok(!grammarAcceptsText(g2, days.text.replace("3", "3.5")), "a fraction for an integer");
        assert.ok(!grammarAcceptsText(g2, city.text), "a parameter already written");
      });
    });
  }
});

describe("the steering over every family's calls", () => {
  const tools = {tools: TOOLS.map((t) => ({name: t.name, parameters: t.parameters, strict: true, enforced: true, templateEntry: null})), choice: {kind: "auto" as const}, parallel: true};
  for (const {id, syntax, parallel} of SYNTAXES) {
    if (callOpeners(syntax).length > 0) test(`${id}: calls opened in free text are bound phase by phase`, () => {
      const calls = parallel ? TWO : ONE;
      const prefix = "Sure.\n";
      const chars = [...(prefix + render(syntax, calls))];
      const plan: SteeringPlan = {reasoning: {mode: "none", open: "<think>", close: "</think>"}, answer: {kind: "free"}, calls: createToolCallGrammars(syntax, tools), parallel: true};
      const steering = new ReplySteering(plan, {push: (t) => chars[t]!, tokenize: () => assert.fail("nothing is placed")});
      const actions = chars.map((_, i) => steering.onToken(i));
      const first = actions.findIndex((a) => a !== null);
      // The first opener in the text (recipient messages write a header before it).
      const text = prefix + render(syntax, calls);
      const [at, opener] = callOpeners(syntax).map((o) => [text.indexOf(o), o] as const).filter(([i]) => i >= 0).sort((a, b) => a[0] - b[0])[0]!;
      assert.equal(first, [...text.slice(0, at)].length + [...opener].length - 1, "the open phase binds right after the opener");
      assert.ok(actions.every((a) => a === null || (a.replaceWith === undefined && a.bind !== undefined)));
      assert.equal(steering.callsClosed, calls.length);
    });
  }
});

describe("shape details", () => {
  const check = async (g: PhaseGrammar, s: CallSyntax, accept: [string, Boundary][], refuse: string[]) => {
    const grammar = await load(g);
    for (const [text, want] of accept) {
      assert.ok(grammarAcceptsText(grammar, text), `accepts ${JSON.stringify(text)}`);
      assert.deepEqual(phaseBoundary(s, g.phase, text), want, `boundary of ${JSON.stringify(text)}`);
      for (let i = 0; i < text.length; i++) assert.equal(phaseBoundary(s, g.phase, text.slice(0, i)), null, JSON.stringify(text.slice(0, i)));
    }
    for (const text of refuse) assert.ok(!grammarAcceptsText(grammar, text), `refuses ${JSON.stringify(text)}`);
  };
  const family = (id: string) => FAMILIES.find((f) => f.id === id)!.calls!;
  const param = (name: string): Boundary => ({kind: "parameter", name});
  const objTool: ToolSpec = {
    name: "t", strict: true,
    parameters: {type: "object", properties: {s: {type: "string"}, o: {type: "object", properties: {x: {type: "string"}}}, b: {type: "string", maxLength: 3}}},
  };

  test("openers: what opens a call in free text", () => {
    const openers = Object.fromEntries(SYNTAXES.map(({id, syntax}) => [id, callOpeners(syntax)]));
    assert.deepEqual(openers["qwen3-coder"], ["<tool_call>"]);
    assert.deepEqual(openers.hermes, ["<tool_call>"]);
    assert.deepEqual(openers["minimax-m2"], ["<minimax:tool_call>"]);
    assert.deepEqual(openers["deepseek-v3"], ["<｜tool▁calls▁begin｜>"]);
    assert.deepEqual(openers.mistral, ["[TOOL_CALLS]"]);
    assert.deepEqual(openers["minicpm5"], ['<function name="']);
    assert.deepEqual(openers["gpt-oss"], ["<|channel|>commentary to="]);
    assert.deepEqual(openers["gemma4"], ["<|tool_call>"]);
    assert.deepEqual(openers["generic form"], []);
    assert.deepEqual(openers.llama3, []);
    assert.deepEqual(openers["functionary-v3.1"], ["<function="]);
    assert.deepEqual(openers["firefunction-v2"], ["functools"]);
    assert.deepEqual(openers["command-r-plus"], ["Action:\n```json\n"]);
    assert.deepEqual(openers["gigachat-3"], ["<|message_sep|>\n\nfunction call<|role_sep|>\n"]);
    assert.deepEqual(openers["gigachat-3.1"], ["<|function_call|>"]);
    assert.deepEqual(openers["solar-open"], ["<|tool_calls|>"]);
    assert.deepEqual(openers.apertus, ["<|tools_prefix|>"]);
    assert.deepEqual(openers["kimi-k3"], ["<|open|>tools<|sep|>"]);
  });

  test("Kimi K3: calls numbered in an attribute, a JSON value's type named in one", async () => {
    const s = family("kimi-k3");
    await check(openGrammar(s, NAMES, {fromReplyStart: false}), s, [
      ['<|open|>call tool="search" index="12"<|sep|>', {kind: "named", name: "search"}],
    ], ['<|open|>call tool="search"<|sep|>', '<|open|>call tool="search" index="x"<|sep|>']);
    const arg = (k: string, type: string, v: string) => `<|open|>argument key="${k}" type="${type}"<|sep|>${v}<|close|>argument<|sep|>`;
    await check(argumentGrammar(s, TOOLS[0]!, []), s, [[arg("days", "number", "3"), param("days")], [arg("city", "string", "Paris"), param("city")]],
      [arg("days", "string", "3"), arg("days", "text", "3"), arg("city", "number", '"Paris"')]);
  });

  test("Solar Open: a call id of 10 lowercase letters or digits before the name; after a call, another or nothing", async () => {
    const s = family("solar-open");
    await check(openGrammar(s, NAMES, {fromReplyStart: true}), s, [
      ["<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>search<|tool_call:args|>", {kind: "named", name: "search"}],
    ], ["<|tool_calls|><|tool_call:begin|>search<|tool_call:args|>", "<|tool_calls|><|tool_call:begin|>ABCDEFGHIJ<|tool_call:name|>search<|tool_call:args|>"]);
    const more = await load(afterCallGrammar(s, {more: true, names: NAMES}));
    assert.ok(grammarAcceptsText(more, ""));
    assert.ok(!grammarAcceptsText(more, "<|calls|>"), "the end-of-generation token is not text the grammar writes");
  });

  test("Apertus: the call object's only key is the tool's name", async () => {
    const s = family("apertus");
    await check(openGrammar(s, NAMES, {fromReplyStart: true}), s, [['<|tools_prefix|>[{"search":', {kind: "named", name: "search"}]],
      ['<|tools_prefix|>[{"name": "search", "arguments":', '<|tools_prefix|>[{"other":']);
  });

  test("Functionary v3.2: after `>>>` a tool's name, or the answer's recipient, which ends the phase with no call", async () => {
    const s = family("functionary-v3.2");
    await check(openGrammar(s, NAMES, {fromReplyStart: false}), s, [["search\n", {kind: "named", name: "search"}], ["all\n", {kind: "text"}]],
      ["other\n", "all", "search {"]);
    // A required call from the reply's start: the prompt wrote the first `>>>`; after a message the model writes it.
    await check(openGrammar(s, NAMES, {fromReplyStart: true}), s, [["search\n", {kind: "named", name: "search"}],
      [">>>get_weather\n", {kind: "named", name: "get_weather"}]], ["all\n"]);
  });

  test("a prompt that ends with an opener puts the reply in the open phase; the answer's recipient lets it go free", () => {
    const s = family("functionary-v3.2");
    const tools = {tools: TOOLS.map((t) => ({name: t.name, parameters: t.parameters, strict: true, enforced: true, templateEntry: null})),
      choice: {kind: "auto" as const}, parallel: true};
    const calls = createToolCallGrammars(s, tools, "<|start_header_id|>assistant<|end_header_id|>\n\n>>>");
    assert.equal(calls.openedByPrompt, true);
    assert.equal(createToolCallGrammars(s, tools, "<|start_header_id|>assistant<|end_header_id|>\n\n").openedByPrompt, false);
    for (const [reply, closed] of [["all\nSure.>>>search\n{\"query\": \"x\", \"limit\": 1}", 1], ["search\n{\"query\": \"x\", \"limit\": 1}", 1]] as const) {
      const chars = [...reply];
      const plan: SteeringPlan = {reasoning: {mode: "none", open: "", close: ""}, answer: {kind: "free"}, calls, parallel: true};
      const steering = new ReplySteering(plan, {push: (t) => chars[t]!, tokenize: () => assert.fail("nothing is placed")});
      assert.notEqual(steering.initial, null, `${JSON.stringify(reply)}: the open phase is bound before the first token`);
      const actions = chars.map((_, i) => steering.onToken(i));
      assert.equal(steering.callsClosed, closed, JSON.stringify(reply));
      if (reply.startsWith("all")) assert.deepEqual(actions[3], {bind: {grammar: null}}, "after `all\\n` the text is free");
    }
  });

  test("MiniMax M3: a nested value is elements named after its keys (schema order), an array's items in `item` elements", async () => {
    const s = family("minimax-m3");
    const M = "]<]minimax[>[";
    const el = (name: string, inner: string) => `${M}<${name}>${inner}${M}</${name}>`;
    const tool: ToolSpec = {name: "t", strict: true, parameters: {type: "object", required: ["o"], properties: {
      o: {type: "object", required: ["unit"], properties: {unit: {type: "string", enum: ["c", "f"]}, alerts: {type: "array", items: {type: "boolean"}, maxItems: 2}}},
    }}};
    await check(argumentGrammar(s, tool, []), s, [
      [el("o", el("unit", "c") + el("alerts", el("item", "true") + el("item", "false"))), param("o")],
      [el("o", el("unit", "f")), param("o")],
    ], [
      el("o", el("alerts", el("item", "true")) + el("unit", "c")), // members in the schema's order
      el("o", el("unit", "k")), // not a listed value
      el("o", el("unit", "c") + el("alerts", el("item", "yes"))), // not a boolean
      el("o", el("unit", "c") + el("alerts", el("item", "true").repeat(3))), // more items than allowed
      el("o", el("unit", "c") + el("other", "x")), // an undeclared member
      `${M}</invoke>`, // the call may not close before its required parameter
    ]);
  });

  test("tag-ended raw values never hold the tag; JSON values may (in a string); bounded ones hold no `<`", async () => {
    const s = family("minimax-m2");
    const v = (k: string, x: string, kind = "") => `<parameter name="${k}">${x}</parameter>${kind}`;
    await check(argumentGrammar(s, objTool, []), s, [
      ["\n" + v("s", "a < b </param"), param("s")],
      [v("s", "</parameter"), param("s")],
      [v("s", ""), param("s")],
      [v("o", '{"x": "</parameter>"}'), param("o")],
      [v("b", "abc"), param("b")],
    ], [v("s", "a</parameter>b"), v("b", "a<b"), v("b", "abcd"), v("o", '{"x": 1}'), "\n\n" + v("s", "x")]);
  });

  test("DSML: the key's attribute says raw string or JSON, and must match the parameter", async () => {
    const s = family("deepseek-v3.2");
    const p = (k: string, str: boolean, x: string) => `<｜DSML｜parameter name="${k}" string="${str}">${x}</｜DSML｜parameter>`;
    await check(argumentGrammar(s, objTool, []), s, [[p("s", true, "Paris"), param("s")], [p("o", false, '{"x": "y"}'), param("o")]],
      [p("s", false, '"Paris"'), p("o", true, '{"x": "y"}')]);
    const loose = {...objTool, strict: false};
    await check(argumentGrammar(s, loose, []), s, [[p("any", true, "text"), param("any")], [p("n", false, "[1, 2]"), param("n")]], [p("n", false, "not json")]);
  });

  test("GLM 4.7: nothing ends the name, so the open phase ends with the `<` that starts what follows", async () => {
    const s = family("glm-4.7");
    await check(openGrammar(s, NAMES, {fromReplyStart: true}), s, [["<tool_call>get_weather<", {kind: "named", name: "get_weather"}]], ["<tool_call>get_weather"]);
    const weather = TOOLS[0]!;
    await check(argumentGrammar(s, weather, []), s, [["arg_key>city</arg_key><arg_value>Paris</arg_value>", param("city")]], ["<arg_key>city"]);
    await check(argumentGrammar(s, {...weather, parameters: {type: "object", properties: {}}}, []), s, [["/tool_call>", {kind: "closed"}]], []);
  });

  test("Mistral after a call: another [TOOL_CALLS] or the end of the reply (an empty phase)", async () => {
    const s = family("mistral");
    const more = await load(afterCallGrammar(s, {more: true, names: NAMES}));
    assert.ok(grammarAcceptsText(more, ""));
    assert.ok(grammarAcceptsText(more, "[TOOL_CALLS]search[ARGS]"));
    assert.ok(!grammarAcceptsText(more, "Done."));
    const end = await load(afterCallGrammar(s, {more: false, names: NAMES}));
    assert.ok(grammarAcceptsText(end, ""));
    assert.ok(!grammarAcceptsText(end, "[TOOL_CALLS]search[ARGS]"));
    assert.throws(() => afterCallGrammar(family("hermes"), {more: true, names: NAMES}), TypeError);
  });

  test("harmony: after a reasoning message the header starts with <|start|>assistant", async () => {
    const s = family("gpt-oss");
    await check(openGrammar(s, NAMES, {fromReplyStart: true}), s, [
      ["<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>", {kind: "named", name: "search"}],
    ], ["<|channel|>commentary to=search <|constrain|>json<|message|>"]);
  });

  test("Kimi numbers its calls; Command R writes a call id first", async () => {
    await check(openGrammar(family("kimi-k2"), NAMES, {fromReplyStart: false}), family("kimi-k2"), [
      ["<|tool_call_begin|>functions.search:12<|tool_call_argument_begin|>", {kind: "named", name: "search"}],
    ], ["<|tool_call_begin|>functions.search<|tool_call_argument_begin|>"]);
    await check(openGrammar(family("command-r7b"), NAMES, {fromReplyStart: false}), family("command-r7b"), [
      ['[{"tool_call_id": "7", "tool_name": "search", "parameters":', {kind: "named", name: "search"}],
    ], ['[{"tool_name": "search", "parameters":', '[{"tool_call_id": "x", "tool_name": "search", "parameters":']);
  });

  test("Gemma: its own notation for nested values, enums and bounded strings; keys it cannot write make the tool ineligible", async () => {
    const s = family("gemma4");
    const tool: ToolSpec = {
      name: "t", strict: true,
      parameters: {
        type: "object", required: ["o"],
        properties: {o: {type: "object", properties: {k: {enum: ["a", 1]}, l: {type: "array", items: {type: "boolean"}}}, required: ["k"]}, b: {type: "string", maxLength: 2}},
      },
    };
    await check(argumentGrammar(s, tool, []), s, [
      [`o:{k:${Q}a${Q},l:[true,false]}}<tool_call|>`, {kind: "closed", name: "o"}],
      [`o:{k:1},`, param("o")],
      [`b:${Q}x>${Q},`, param("b")],
      [`o:{k:1,kk:${Q}extra keys stay open${Q},l2:{}},`, param("o")],
    ], [`o:{k:1,l:[],k:2},`, `o:{k:1,l:[],l:[]},`, `o:{k:${Q}b${Q}}}<tool_call|>`, `o:{l:[]}}<tool_call|>`, `o:{k:1, l:[]}}<tool_call|>`, `b:${Q}<${Q},`, `b:${Q}abc${Q},`, `}<tool_call|>`]);
    const loose = await load(argumentGrammar(s, {...tool, strict: false}, []));
    assert.ok(grammarAcceptsText(loose, `any:{x:[1,${Q}two${Q},null]},y:-2.5}<tool_call|>`));
    assert.ok(!grammarAcceptsText(loose, `any: 1}<tool_call|>`));
    const spaced = strictEligibility({type: "object", properties: {"two words": {type: "string"}}}, s);
    assert.equal(spaced.enforce, false);
    assert.match((spaced as {reason: string}).reason, /cannot be written in a Gemma tool call/);
  });
});
