// MiniCPM 5: XML calls with the parameters as attributes-named tags; <think> reasoning.
//   <function name="get_weather"><param name="city">Paris</param></function>

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const MINICPM_CALLS: XmlCallSyntax = {
  shape: "xml", section: null, open: "<function name=\"", nameEnd: "\">", keyOpen: "<param name=\"", keyEnd: "\">", valueEnd: "</param>",
  close: "</function>", separator: "",
};

export const minicpm5: ModelFamily = {
  id: "minicpm5",
  name: "MiniCPM 5 (<function name=...><param name=...>, <think>)",
  matches: ({source}) => has(source, "<function name=", "<param name="),
  reasoning: THINK,
  calls: MINICPM_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
