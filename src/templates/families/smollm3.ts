// SmolLM3: reasoning in <think> switched by enable_thinking (the template writes /think or /no_think into the
// system turn). The template shows no tools, so calls use the generic form taught in a system message.

import {has, THINK, type ModelFamily} from "./family.ts";

export const smollm3: ModelFamily = {
  id: "smollm3",
  name: "SmolLM3 (<think>, generic calls)",
  matches: ({source}) => has(source, "/no_think", "/think", "<think>") && source.includes("SmolLM"),
  reasoning: THINK,
  calls: null,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};
