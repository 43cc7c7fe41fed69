// Reply parsing details of families whose markers overlap or whose calls are written unlike the others: Command R+
// (its close ``` sits inside its opener and is ordinary markdown), Solar Open (message headers as layout, a call id
// before the name, the section closed by the end of generation), Apertus (calls keyed by the tool's name) and Kimi K3
// (numbered calls, typed argument tags). Every case is fed whole and one char at a time.

import assert from "node:assert/strict";
import {test} from "node:test";
import {createReplyParser, type ReplyPart} from "../../../../src/pipeline/reply/index.ts";
import {familyById} from "../../../../src/templates/families/index.ts";

const TOOLS = [{name: "get_weather", parameters: {type: "object"}}, {name: "get_time", parameters: {type: "object"}}];

function read(id: string, text: string, startsInside = false): {reasoning: string; content: string; calls: {name: string; args: unknown; complete: boolean}[]} {
  const family = familyById(id)!;
  const runs = [[text], [...text]].map((chunks) => {
    const parser = createReplyParser({calls: family.calls, tools: TOOLS, layout: family.layout,
      reasoning: family.reasoning ? {...family.reasoning, startsInside} : null});
    const parts: ReplyPart[] = [];
    for (const c of chunks) parts.push(...parser.push(c));
    parts.push(...parser.finish());
    const out = {reasoning: "", content: "", calls: [] as {name: string; args: unknown; complete: boolean}[]};
    const args: string[] = [];
    for (const p of parts) {
      if (p.kind === "reasoning") out.reasoning += p.text;
      else if (p.kind === "content") out.content += p.text;
      else if (p.kind === "call_start") (out.calls[p.index] = {name: p.name, args: null, complete: false}, args[p.index] = "");
      else if (p.kind === "call_args") args[p.index] += p.text;
      else if (p.kind === "call_end") out.calls[p.index] = {...out.calls[p.index]!, args: JSON.parse(args[p.index]!), complete: p.complete};
    }
    return out;
  });
  assert.deepEqual(runs[1], runs[0], "one char at a time reads as whole");
  return runs[0]!;
}

test("Command R+: calls after Action:, code fences elsewhere stay in the text", () => {
  const r = read("command-r-plus", 'Sure.\nAction:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters": {"city": "Paris"}\n    }\n]```\n');
  assert.deepEqual(r, {reasoning: "", content: "Sure.", calls: [{name: "get_weather", args: {city: "Paris"}, complete: true}]});
  const code = "Use this:\n```python\nprint(1)\n```\nDone.";
  assert.equal(read("command-r-plus", code).content, code);
});

test("Solar Open: headers are layout, the call id is skipped, the end of generation closes the section", () => {
  const r = read("solar-open", "<|think|>plan<|end|><|begin|>assistant<|content|>Let me check.<|end|><|begin|>assistant<|tool_calls|>" +
    '<|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Paris"}<|tool_call:end|>' +
    '<|tool_call:begin|>call_0002<|tool_call:name|>get_time<|tool_call:args|>{}<|tool_call:end|>');
  assert.deepEqual(r, {reasoning: "plan", content: "Let me check.",
    calls: [{name: "get_weather", args: {city: "Paris"}, complete: true}, {name: "get_time", args: {}, complete: true}]});
});

test("Apertus: a list of objects keyed by the tool's name", () => {
  const r = read("apertus", '<|inner_prefix|>plan<|inner_suffix|>On it.<|tools_prefix|>[{"get_weather": {"city": "Paris", "o": {"a": [1]}}}, ' +
    '{"get_time": {}}]<|tools_suffix|>');
  assert.deepEqual(r, {reasoning: "plan", content: "On it.",
    calls: [{name: "get_weather", args: {city: "Paris", o: {a: [1]}}, complete: true}, {name: "get_time", args: {}, complete: true}]});
});

test("Kimi K3: the prompt opens the think section; numbered calls, argument types from the attribute or the schema", () => {
  const arg = (k: string, type: string, v: string) => `<|open|>argument key="${k}" type="${type}"<|sep|>${v}<|close|>argument<|sep|>`;
  const r = read("kimi-k3", "plan<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|><|open|>tools<|sep|>" +
    `<|open|>call tool="get_weather" index="1"<|sep|>${arg("city", "string", "Paris")}${arg("days", "number", "2")}${arg("o", "object", '{"a": [true]}')}` +
    `<|close|>call<|sep|><|open|>call tool="get_time" index="2"<|sep|>${arg("zone", "string", "CET")}<|close|>call<|sep|>` +
    "<|close|>tools<|sep|><|close|>message<|sep|>", true);
  assert.deepEqual(r, {reasoning: "plan", content: "On it.",
    calls: [{name: "get_weather", args: {city: "Paris", days: 2, o: {a: [true]}}, complete: true}, {name: "get_time", args: {zone: "CET"}, complete: true}]});
});
