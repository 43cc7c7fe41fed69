// Kimi K2 (Instruct and Thinking): calls in a section, each named functions.NAME:INDEX, arguments JSON; the
// Thinking model reasons in <think>.
//   <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}
//   <|tool_call_end|><|tool_calls_section_end|>

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const KIMI_CALLS: NamedCallSyntax = {
  shape: "named", section: {open: "<|tool_calls_section_begin|>", close: "<|tool_calls_section_end|>"}, open: "<|tool_call_begin|>",
  namePrefix: "functions.", nameIndex: true, nameEnd: "<|tool_call_argument_begin|>", argsEnd: "", close: "<|tool_call_end|>", separator: "",
};

export const kimiK2: ModelFamily = {
  id: "kimi-k2",
  name: "Kimi K2 (functions.NAME:N sections, <think>)",
  matches: ({source}) => has(source, "<|tool_calls_section_begin|>", "<|tool_call_begin|>"),
  reasoning: THINK,
  calls: KIMI_CALLS,
  parallelCalls: true,
  preserved: ["<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>"],
  input: {reasoning: "reasoning_content"},
};
