// DeepSeek V3.1: calls in a section, the name before a separator, JSON arguments; <think> reasoning (the
// generation prompt opens the block when thinking is on, closes it at once when off).
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const DEEPSEEK_V3_CALLS: NamedCallSyntax = {
  shape: "named", section: {open: "<｜tool▁calls▁begin｜>", close: "<｜tool▁calls▁end｜>"}, open: "<｜tool▁call▁begin｜>", namePrefix: "",
  nameIndex: false, nameEnd: "<｜tool▁sep｜>", argsEnd: "", close: "<｜tool▁call▁end｜>", separator: "",
};

export const deepseekV3: ModelFamily = {
  id: "deepseek-v3",
  name: "DeepSeek V3.1 (<｜tool▁calls▁begin｜>, <think>)",
  matches: ({source}) => has(source, "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>") && !source.includes("```json"),
  reasoning: THINK,
  calls: DEEPSEEK_V3_CALLS,
  parallelCalls: true,
  preserved: ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"],
  input: {reasoning: "reasoning_content"},
};
