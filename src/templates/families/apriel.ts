// ServiceNow Apriel 1.5 / 1.6: one JSON list of calls in <tool_calls> tags. Its reasoning (free text before
// "[BEGIN FINAL RESPONSE]") has no opening marker, so it is left in the content.
//   <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {writesCall, type ModelFamily} from "./family.ts";

export const APRIEL_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<tool_calls>", list: true, close: "</tool_calls>", nameKey: "name", argsKey: "arguments", pad: "",
};

export const apriel: ModelFamily = {
  id: "apriel",
  name: "Apriel 1.5 / 1.6 (<tool_calls>[...])",
  matches: (facts) => writesCall(facts, /<tool_calls>\s*\[/, false),
  reasoning: null,
  calls: APRIEL_CALLS,
  parallelCalls: true,
  preserved: [],
  layout: ["[BEGIN FINAL RESPONSE]", "[END FINAL RESPONSE]"],
  input: {reasoning: "none"},
};
