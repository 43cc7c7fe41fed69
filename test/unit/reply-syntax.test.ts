// Call-syntax detection from a template, and the system text for templates without tool support.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ReplyParser, detectToolSyntax, genericToolsPrompt} from "../../src/pipeline/reply/index.ts";

describe("detectToolSyntax", () => {
  test("picks the syntax the template teaches", () => {
    assert.equal(detectToolSyntax("{{ '<tool_call>\\n<function=' + name }}"), "qwen-xml");
    assert.equal(detectToolSyntax("{{ '<tool_call>\\n' + tool_call | tojson }}"), "hermes");
    assert.equal(detectToolSyntax("{% for m in messages %}{{ m.content }}{% endfor %}"), "generic");
    assert.equal(detectToolSyntax(null), "generic");
  });
});

describe("genericToolsPrompt", () => {
  const tools = [
    {name: "get_weather", description: "Weather for a city", parameters: {type: "object", properties: {city: {type: "string"}}}},
    {name: "now"},
  ];

  test("lists each tool as JSON and describes the exact form", () => {
    const text = genericToolsPrompt(tools, {parallel: true});
    assert.ok(text.includes(JSON.stringify({name: "get_weather", description: "Weather for a city", parameters: tools[0]!.parameters})));
    assert.ok(text.includes('{"name":"now","parameters":{"type":"object","properties":{}}}'));
    assert.ok(text.includes('{"tool_calls": [{"name": '));
    assert.ok(text.includes("To answer normally, just write text."));
    assert.ok(text.includes("several calls"));
    assert.ok(!text.includes("at most one"));
  });

  test("parallel=false allows at most one call", () => {
    assert.ok(genericToolsPrompt(tools, {parallel: false}).includes("at most one call"));
  });

  test("a reply in the form it describes parses as calls", () => {
    const p = new ReplyParser({syntax: "generic", tools: [], reasoning: null});
    const parts = [...p.push('{"tool_calls": [{"name": "now", "arguments": {}}]}'), ...p.finish()];
    assert.deepEqual(parts, [
      {kind: "call_start", index: 0, name: "now"},
      {kind: "call_args", index: 0, text: "{}"},
      {kind: "call_end", index: 0, complete: true},
    ]);
  });
});
