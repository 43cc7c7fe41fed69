// Tencent Hunyuan 3: GLM-like key/value calls in its own ":opensource" tags, inside a section; reasoning in
// <think:opensource>.
//   <tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n
//   <arg_value:opensource>Paris</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {writesCall, type ModelFamily} from "./family.ts";

export const HY3_CALLS: XmlCallSyntax = {
  shape: "xml", section: {open: "<tool_calls:opensource>\n", close: "</tool_calls:opensource>"}, open: "<tool_call:opensource>",
  nameEnd: "<tool_sep:opensource>\n", keyOpen: "<arg_key:opensource>", keyEnd: "</arg_key:opensource>\n<arg_value:opensource>",
  valueEnd: "</arg_value:opensource>\n", close: "</tool_call:opensource>\n", separator: "",
};

export const hy3: ModelFamily = {
  id: "hy3",
  name: "Hunyuan 3 (<tool_calls:opensource>, <think:opensource>)",
  matches: (facts) => writesCall(facts, /<tool_call:opensource>/, facts.source.includes("tool_call:opensource")),
  reasoning: {open: "<think:opensource>", close: "</think:opensource>"},
  calls: HY3_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
