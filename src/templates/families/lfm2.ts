// Liquid AI's LFM2 and LFM2.5: the tools listed in the system message ("List of tools: [...]", between
// <|tool_list_start|> and <|tool_list_end|> in LFM2), calls as Python function calls in one list, reasoning in
// <think> (LFM2.5 8B). LFM2.5 8B's template writes earlier calls itself (strings in single quotes); the others render
// only an assistant turn's content, so the server writes earlier calls back into it (src/pipeline/past-calls.ts).
//   <|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>

import type {PythonicCallSyntax} from "../../core/call-syntax.ts";
import {THINK, type ModelFamily} from "./family.ts";

export const LFM2_CALLS: PythonicCallSyntax = {shape: "pythonic", open: "<|tool_call_start|>", close: "<|tool_call_end|>"};

export const lfm2: ModelFamily = {
  id: "lfm2",
  name: "LFM2 / LFM2.5 (<|tool_call_start|>[NAME(KEY=VALUE)])",
  // As llama.cpp tells them apart: LFM2 marks its tool list, LFM2.5 writes it plainly.
  matches: ({source}) => source.includes("<|tool_list_start|>") || source.includes("List of tools: ["),
  // Read only where the template knows the block (LFM2.5; reply-plan.ts).
  reasoning: THINK,
  calls: LFM2_CALLS,
  parallelCalls: true,
  preserved: ["<|tool_call_start|>", "<|tool_call_end|>", THINK.open, THINK.close],
  // LFM2.5 8B shows the latest turns' reasoning from `thinking`; the other templates show none.
  input: {reasoning: "thinking"},
};
