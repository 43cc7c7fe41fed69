// MiniMax M2: invoke blocks in one section, one parameter per tag, string values raw; <think> reasoning (the
// generation prompt opens the block).
//   <minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const MINIMAX_CALLS: XmlCallSyntax = {
  shape: "xml", section: {open: "<minimax:tool_call>\n", close: "</minimax:tool_call>"}, open: "<invoke name=\"", nameEnd: "\">\n",
  keyOpen: "<parameter name=\"", keyEnd: "\">", valueEnd: "</parameter>\n", close: "</invoke>\n", separator: "",
};

export const minimaxM2: ModelFamily = {
  id: "minimax-m2",
  name: "MiniMax M2 (<minimax:tool_call> invoke blocks, <think>)",
  matches: ({source}) => has(source, "<minimax:tool_call>", "<invoke name="),
  reasoning: THINK,
  calls: MINIMAX_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
