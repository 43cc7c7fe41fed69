// The recipients reader (src/syntax/recipients/reader.ts) on Muse Glimmer's ATEM messages and Functionary v3.2's
// `>>>` messages: reasoning, the answer and calls come apart in every chunking; a call's values are typed by its tool's
// schema; a call message without tools is dropped; a reply that ignores the format is content; a call cut short is
// reported malformed.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {createReplyParser} from "../../../src/pipeline/reply/parser.ts";
import type {ReplyPart} from "../../../src/pipeline/reply/types.ts";
import type {RecipientCallSyntax} from "../../../src/core/call-syntax.ts";
import {FUNCTIONARY_32_CALLS} from "../../../src/templates/families/functionary-v32.ts";
import {MUSE_CALLS} from "../../../src/templates/families/muse-glimmer.ts";

const TOOLS = [{name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}, opts: {type: "object"}}}}];

interface Read {
  reasoning: string;
  content: string;
  calls: {name: string; args: unknown; complete: boolean}[];
  malformed: number[];
}

function read(text: string, chunk: number, tools = true, syntax: RecipientCallSyntax = MUSE_CALLS): Read {
  const p = createReplyParser({calls: tools ? syntax : null, familyCalls: syntax, tools: TOOLS, reasoning: null});
  const parts: ReplyPart[] = [];
  for (let i = 0; i < text.length; i += chunk) parts.push(...p.push(text.slice(i, i + chunk)));
  parts.push(...p.finish());
  const out: Read = {reasoning: "", content: "", calls: [], malformed: []};
  const args: string[] = [];
  for (const part of parts) {
    if (part.kind === "reasoning") out.reasoning += part.text;
    else if (part.kind === "content") out.content += part.text;
    else if (part.kind === "call_start") {
      out.calls[part.index] = {name: part.name, args: null, complete: false};
      args[part.index] = "";
    } else if (part.kind === "call_args") args[part.index] += part.text;
    else if (part.kind === "call_end") {
      out.calls[part.index]!.complete = part.complete;
      out.calls[part.index]!.args = JSON.parse(args[part.index]!);
    } else out.malformed.push(...part.indices);
  }
  return out;
}

/** The same result whole, one character at a time, and in chunks of 3 and 7. */
function readAll(text: string, tools = true, syntax: RecipientCallSyntax = MUSE_CALLS): Read {
  const whole = read(text, text.length || 1, tools, syntax);
  for (const n of [1, 3, 7]) assert.deepEqual(read(text, n, tools, syntax), whole, `chunks of ${n}`);
  return whole;
}

const call = (name: string, params: string) =>
  `<|start|>assistant to=${name}<|message|><atem:function_calls>\n<atem:invoke name="${name}">\n${params}</atem:invoke>\n</atem:function_calls><|eom|>`;
const param = (k: string, v: string) => `<atem:parameter name="${k}">${v}</atem:parameter>\n`;

describe("recipient messages (Muse Glimmer)", () => {
  test("reasoning, the answer and two calls, values typed by the schema", () => {
    const text = " to=self<|message|>Weather first.<|eom|><|start|>assistant to=user<|message|>Let me check.<|eom|>" +
      call("get_weather", param("city", "Paris") + param("days", "2") + param("opts", '{"unit": "c"}')) +
      call("get_weather", param("city", "Lyon"));
    const r = readAll(text);
    assert.equal(r.reasoning, "Weather first.");
    assert.equal(r.content, "Let me check.");
    assert.deepEqual(r.calls, [
      {name: "get_weather", args: {city: "Paris", days: 2, opts: {unit: "c"}}, complete: true},
      {name: "get_weather", args: {city: "Lyon"}, complete: true},
    ]);
    assert.deepEqual(r.malformed, []);
  });

  test("a reply that starts with a call (the prompt wrote the message start)", () => {
    const r = readAll(call("get_weather", param("city", "Paris")).slice("<|start|>assistant".length));
    assert.deepEqual(r.calls, [{name: "get_weather", args: {city: "Paris"}, complete: true}]);
    assert.equal(r.content, "");
  });

  test("an answer only, ended by the end of the turn", () => {
    const r = readAll(" to=user<|message|>It is sunny in Paris.<|eot|>");
    assert.deepEqual(r, {reasoning: "", content: "It is sunny in Paris.", calls: [], malformed: []});
  });

  test("a reply that ignores the format is content, whole", () => {
    const r = readAll("Hello there, to=user is just text");
    assert.deepEqual(r, {reasoning: "", content: "Hello there, to=user is just text", calls: [], malformed: []});
  });

  test("without tools, a call message is dropped as syntax and never reaches content", () => {
    const r = readAll(" to=user<|message|>Sure.<|eom|>" + call("get_weather", param("city", "Paris")), false);
    assert.deepEqual(r, {reasoning: "", content: "Sure.", calls: [], malformed: []});
  });

  test("a call cut short by the end of generation is incomplete and reported malformed", () => {
    const r = readAll(call("get_weather", param("city", "Paris")).slice(0, -"</atem:invoke>\n</atem:function_calls><|eom|>".length));
    assert.equal(r.calls.length, 1);
    assert.equal(r.calls[0]!.complete, false);
    assert.deepEqual(r.malformed, [0]);
    assert.equal(r.content, "");
  });

  test("a tool message whose body is not a call is dropped, and the messages after it are read", () => {
    const r = readAll("<|start|>assistant to=get_weather<|message|>not a call<|eom|><|start|>assistant to=user<|message|>Done.<|eot|>");
    assert.deepEqual(r, {reasoning: "", content: "Done.", calls: [], malformed: []});
  });
});

describe("`>>>` messages (Functionary v3.2): the prompt wrote the first `>>>`", () => {
  const f = (text: string, tools = true) => readAll(text, tools, FUNCTIONARY_32_CALLS);

  test("the answer, then two calls whose bodies are their arguments as JSON", () => {
    const r = f('all\nLet me check.>>>get_weather\n{"city": "Paris", "days": 2}>>>get_weather\n{"city": "Lyon"}');
    assert.deepEqual(r, {reasoning: "", content: "Let me check.", malformed: [], calls: [
      {name: "get_weather", args: {city: "Paris", days: 2}, complete: true},
      {name: "get_weather", args: {city: "Lyon"}, complete: true},
    ]});
  });

  test("a reply that starts with a call, and one that is only the answer", () => {
    assert.deepEqual(f('get_weather\n{"city": "Paris"}').calls, [{name: "get_weather", args: {city: "Paris"}, complete: true}]);
    assert.deepEqual(f("all\nIt is sunny."), {reasoning: "", content: "It is sunny.", calls: [], malformed: []});
  });

  test("a first line that names no recipient is the model ignoring the format: all of it is content", () => {
    assert.deepEqual(f("It is sunny in Paris today.\nAnd warm."), {reasoning: "", content: "It is sunny in Paris today.\nAnd warm.", calls: [], malformed: []});
    assert.deepEqual(f("Sunny"), {reasoning: "", content: "Sunny", calls: [], malformed: []});
  });

  test("arguments cut short are an incomplete call, reported malformed; without tools a call is dropped", () => {
    const r = f('get_weather\n{"city": "Par');
    assert.equal(r.calls[0]!.complete, false);
    assert.deepEqual(r.calls[0]!.args, {city: "Par"});
    assert.deepEqual(r.malformed, [0]);
    assert.deepEqual(f('all\nSure.>>>get_weather\n{"city": "Paris"}', false), {reasoning: "", content: "Sure.", calls: [], malformed: []});
  });
});
