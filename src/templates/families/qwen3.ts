// Qwen3 (and QwQ, Bielik and other ChatML models trained the same way): Hermes JSON calls and a <think> block.
//   <think>\n...\n</think>\n\n<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
// QwQ's generation prompt opens the block itself (its replies always reason).

import {HERMES_CALLS, hermes} from "./hermes.ts";
import {THINK, type ModelFamily} from "./family.ts";

export const qwen3: ModelFamily = {
  id: "qwen3",
  name: "Qwen3, QwQ (Hermes JSON calls, <think>)",
  matches: (facts) => facts.source.includes("<think>") && hermes.matches(facts),
  reasoning: THINK,
  calls: HERMES_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
