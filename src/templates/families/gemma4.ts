// Gemma 4: calls in Gemma's own argument syntax (keys bare, strings between <|"|> marks), reasoning in a
// thought channel (the generation prompt closes it at once when thinking is off).
//   <|channel>thought\n...<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>
// The template prints the arguments itself from an object.

import {has, type ModelFamily} from "./family.ts";

export const gemma4: ModelFamily = {
  id: "gemma4",
  name: "Gemma 4 (<|tool_call>call:NAME{...}, thought channel)",
  matches: ({source}) => has(source, "<|tool_call>call:"),
  reasoning: {open: "<|channel>thought", close: "<channel|>"},
  calls: {shape: "custom", kind: "gemma4"},
  parallelCalls: true,
  preserved: ["<|tool_call>", "<tool_call|>", "<|\"|>", "<|channel>", "<channel|>"],
  input: {reasoning: "reasoning_content", argumentsAsObject: true},
};
