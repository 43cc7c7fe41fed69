// Cohere Command R7B (and Command A / North, Cohere2MoE): a plan in a thinking block, the calls as one JSON list
// in an action block, the answer inside response markers.
//   <|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather",
//   "parameters": {"city": "Paris"}}]<|END_ACTION|>
//   <|START_RESPONSE|>answer<|END_RESPONSE|>

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import type {ModelFamily} from "./family.ts";

export const COMMAND_R_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<|START_ACTION|>", list: true, close: "<|END_ACTION|>", nameKey: "tool_name", argsKey: "parameters", idKey: "tool_call_id",
  pad: "",
};

export const commandR7b: ModelFamily = {
  id: "command-r7b",
  name: "Command R7B, Command A (<|START_ACTION|>[...], <|START_THINKING|>)",
  matches: ({source}) => source.includes("<|START_ACTION|>"),
  reasoning: {open: "<|START_THINKING|>", close: "<|END_THINKING|>"},
  calls: COMMAND_R_CALLS,
  parallelCalls: true,
  preserved: ["<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"],
  layout: ["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
  input: {reasoning: "reasoning_content"},
};
