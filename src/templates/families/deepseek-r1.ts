// DeepSeek R1 and its distills (Llama, Qwen): they always reason (the generation prompt opens <think>), and a
// call names its type, then its name, then the arguments in a fenced JSON block.
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

export const DEEPSEEK_R1_CALLS: NamedCallSyntax = {
  shape: "named", section: {open: "<｜tool▁calls▁begin｜>", close: "<｜tool▁calls▁end｜>"}, open: "<｜tool▁call▁begin｜>",
  namePrefix: "function<｜tool▁sep｜>", nameIndex: false, nameEnd: "\n```json\n", argsEnd: "\n```", close: "<｜tool▁call▁end｜>", separator: "\n",
};

export const deepseekR1: ModelFamily = {
  id: "deepseek-r1",
  name: "DeepSeek R1 and R1 distills (fenced JSON calls, always <think>)",
  matches: ({source}) => has(source, "<｜tool▁calls▁begin｜>", "```json"),
  reasoning: THINK,
  calls: DEEPSEEK_R1_CALLS,
  parallelCalls: true,
  preserved: ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"],
  input: {reasoning: "reasoning_content"},
};
