// The system text for templates without tool support (the generic form), and a reply in that form.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ReplyParser, genericToolsPrompt} from "../../../../src/pipeline/reply/index.ts";
import {GENERIC_CALLS} from "../../../../src/templates/families/generic.ts";

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
    const p = new ReplyParser({calls: GENERIC_CALLS, tools: [], reasoning: null});
    const parts = [...p.push('{"tool_calls": [{"name": "now", "arguments": {}}]}'), ...p.finish()];
    assert.deepEqual(parts, [
      {kind: "call_start", index: 0, name: "now"},
      {kind: "call_args", index: 0, text: "{}"},
      {kind: "call_end", index: 0, complete: true},
    ]);
  });
});
