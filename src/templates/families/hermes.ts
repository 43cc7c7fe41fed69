// Hermes-style calls without reasoning: Hermes 2 Pro / Hermes 3, Qwen2.5, MiMo-VL, Reka, Granite 4 share it.
//   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
// One object per tag; a second call gets its own tag.

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {QWEN_XML_CALLS} from "./qwen3-coder.ts";
import {has, writesCall, type ModelFamily} from "./family.ts";

/** How a template that writes Hermes calls renders one: a JSON object right inside <tool_call>. */
export const HERMES_WRITTEN = /<tool_call>\s*\{/;

export const HERMES_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<tool_call>", list: false, close: "</tool_call>", nameKey: "name", argsKey: "arguments", pad: "\n",
  // Qwen models trained on both forms sometimes write XML where JSON was due.
  alsoReads: QWEN_XML_CALLS,
};

export const hermes: ModelFamily = {
  id: "hermes",
  name: "Hermes 2 / 3, Qwen2.5 (Hermes JSON calls)",
  matches: (facts) => writesCall(facts, HERMES_WRITTEN, has(facts.source, "<tool_call>", "</tool_call>") && !facts.source.includes("<function=")),
  reasoning: null,
  calls: HERMES_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
