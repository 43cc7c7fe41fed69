// Part-level behaviour of the reply parser: what is released when (streaming, hold-back), the exact
// part format, mode and call counting.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ReplyParser, type ReplyParserOptions, type ReplyPart, type ToolSpec} from "../../../../src/pipeline/reply/index.ts";
import {SYNTAXES} from "./helpers/syntaxes.ts";

const TOOLS: ToolSpec[] = [
  {name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}}},
];
const THINK = {open: "<think>", close: "</think>", startsInside: false};

function parser(opts: Partial<ReplyParserOptions>): ReplyParser {
  return new ReplyParser({calls: null, tools: TOOLS, reasoning: null, ...opts});
}

const args = (parts: ReplyPart[]) => parts.flatMap((p) => (p.kind === "call_args" ? [p.text] : []));
const content = (parts: ReplyPart[]) => parts.flatMap((p) => (p.kind === "content" ? [p.text] : []));

describe("ReplyParser streaming", () => {
  test("qwen-xml string values stream before </parameter>", () => {
    const p = parser({calls: SYNTAXES["qwen-xml"]});
    assert.deepEqual(p.push("<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"), [
      {kind: "call_start", index: 0, name: "get_weather"},
      {kind: "call_args", index: 0, text: '{"city": "Par'},
    ]);
    assert.deepEqual(args(p.push('i"s\n')), ['i\\"s']); // the newline may be layout: held
    assert.deepEqual(args(p.push("x\n</parameter>\n")), ['\\nx"']);
    assert.deepEqual(p.push("</function>\n</tool_call>"), [
      {kind: "call_args", index: 0, text: "}"},
      {kind: "call_end", index: 0, complete: true},
    ]);
    assert.deepEqual(p.finish(), []);
  });

  test("qwen-xml non-string values wait for </parameter>", () => {
    const p = parser({calls: SYNTAXES["qwen-xml"]});
    p.push("<tool_call>\n<function=get_weather>\n<parameter=days>\n1");
    assert.deepEqual(args(p.push("2\n")), []);
    assert.deepEqual(args(p.push("</parameter>")), ['"days": 12']);
  });

  test("the whole-text part list has the documented shape", () => {
    const p = parser({calls: SYNTAXES["qwen-xml"], reasoning: THINK});
    const text = "<think>\nhm\n</think>\n\nLet me look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n" +
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    assert.deepEqual([...p.push(text), ...p.finish()], [
      {kind: "reasoning", text: "hm"},
      {kind: "content", text: "Let me look."},
      {kind: "call_start", index: 0, name: "get_weather"},
      {kind: "call_args", index: 0, text: '{"city": "Paris", "days": 3}'},
      {kind: "call_end", index: 0, complete: true},
    ]);
  });

  test("hermes announces the name once its string closes, then streams the arguments", () => {
    const p = parser({calls: SYNTAXES["hermes"]});
    assert.deepEqual(p.push('<tool_call>\n{"name": "get_wea'), []);
    assert.deepEqual(p.push('ther", "arguments": {"city": "Pa'), [
      {kind: "call_start", index: 0, name: "get_weather"},
      {kind: "call_args", index: 0, text: '{"city": "Pa'},
    ]);
    assert.deepEqual(args(p.push('ris", "days": 3')), ['ris", "days": ']); // the number waits for its end
    assert.deepEqual(args(p.push("}")), ["3}"]);
    assert.deepEqual(p.push("}\n</tool_call>"), [{kind: "call_end", index: 0, complete: true}]);
  });

  test("content that could start a call marker is held, then released", () => {
    const p = parser({calls: SYNTAXES["hermes"]});
    assert.deepEqual(content(p.push("Hello <tool")), ["Hello"]);
    assert.deepEqual(content(p.push("s")), [" <tools"]);
    assert.deepEqual(content(p.push(" and <")), [" and"]); // the space could precede a call: held too
    assert.deepEqual(p.finish(), [{kind: "content", text: " <"}]);
  });

  test("without tools nothing is held", () => {
    const p = parser({});
    assert.deepEqual(p.push("a <tool_call"), [{kind: "content", text: "a <tool_call"}]);
  });

  test("reasoning holds its trailing newlines until it knows whether </think> follows", () => {
    const p = parser({reasoning: THINK});
    assert.deepEqual(p.push("<think>\nabc\n"), [{kind: "reasoning", text: "abc"}]);
    assert.deepEqual(p.push("def\n</thi"), [{kind: "reasoning", text: "\ndef"}]);
    assert.deepEqual(p.push("nk>\n\nAns"), [{kind: "content", text: "Ans"}]);
  });

  test("generic: the start of the reply is held while it could be the opener", () => {
    const p = parser({calls: SYNTAXES["generic"]});
    assert.deepEqual(p.push(' {"tool'), []);
    assert.deepEqual(p.push("s"), [{kind: "content", text: ' {"tools'}]);
  });

  test("mode follows reasoning, content and call syntax", () => {
    const p = parser({calls: SYNTAXES["hermes"], reasoning: {...THINK, startsInside: true}});
    assert.equal(p.mode, "reasoning");
    p.push("thinking\n</think>");
    assert.equal(p.mode, "content");
    p.push("\n\n<tool_call>");
    assert.equal(p.mode, "call");
    p.push('\n{"name": "a", "arguments": {}}\n</tool_call>');
    assert.equal(p.mode, "content");
  });

  test("mode is reasoning right after <think> and content after a plain start", () => {
    const p = parser({reasoning: THINK});
    p.push("<think>");
    assert.equal(p.mode, "reasoning");
    const q = parser({reasoning: THINK});
    q.push("Hi");
    assert.equal(q.mode, "content");
  });

  test("callsCompleted counts calls whose syntax closed", () => {
    const p = parser({calls: SYNTAXES["hermes"]});
    p.push('<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>');
    assert.equal(p.callsCompleted, 2);
    assert.deepEqual(args(p.push('<tool_call>{"name": "c", "arguments": {"x": ')), ['{"x": ']);
    // A call cut short is reported with the raw text of its region (a reply that is not streamed shows that).
    assert.deepEqual(p.finish(), [{kind: "call_args", index: 2, text: "null}"}, {kind: "call_end", index: 2, complete: false},
      {kind: "malformed", indices: [2], text: '<tool_call>{"name": "c", "arguments": {"x": '}]);
    assert.equal(p.callsCompleted, 2);
  });

  test("finish is final: later pushes and finishes yield nothing", () => {
    const p = parser({});
    p.push("a");
    p.finish();
    assert.deepEqual(p.push("b"), []);
    assert.deepEqual(p.finish(), []);
  });
});
