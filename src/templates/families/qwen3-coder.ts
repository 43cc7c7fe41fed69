// Qwen3-Coder, Qwen3.5, Nemotron 3 Nano and StepFun 3.5: XML calls, one parameter per block, string values raw.
//   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
// Qwen3.5 and Nemotron 3 also think (<think>; their generation prompt may open the block).

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const QWEN_XML_CALLS: XmlCallSyntax = {
  shape: "xml", section: null, open: "<tool_call>\n<function=", nameEnd: ">\n", keyOpen: "<parameter=", keyEnd: ">\n",
  valueEnd: "\n</parameter>\n", close: "</function>\n</tool_call>", separator: "\n",
};

export const qwen3Coder: ModelFamily = {
  id: "qwen3-coder",
  name: "Qwen3-Coder, Qwen3.5, Nemotron 3 Nano (XML calls, <think>)",
  matches: ({source}) => has(source, "<tool_call>", "<function=", "<parameter="),
  reasoning: THINK,
  calls: QWEN_XML_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
