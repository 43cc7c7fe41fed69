// MiniMax M1: the calls as JSON objects, one per line, between <tool_calls> tags.
//   <tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_calls>

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {writesCall, type ModelFamily} from "./family.ts";

export const MINIMAX_M1_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<tool_calls>", list: false, close: "</tool_calls>", nameKey: "name", argsKey: "arguments", pad: "\n",
};

export const minimaxM1: ModelFamily = {
  id: "minimax-m1",
  name: "MiniMax M1 (<tool_calls> JSON lines)",
  matches: (facts) => writesCall(facts, /<tool_calls>\s*\{/, false),
  reasoning: {open: "<think>", close: "</think>"},
  calls: MINIMAX_M1_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};
