// Cohere Command R+ (the tool_use template): the calls as one JSON list in a fenced block after "Action:", with
// Command R's keys; no reasoning block.
//   Action:\n```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]```

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const COMMAND_R_PLUS_CALLS: JsonCallSyntax = {
  shape: "json", opener: "Action:\n```json\n", list: true, close: "```", nameKey: "tool_name", argsKey: "parameters", pad: "",
};

export const commandRPlus: ModelFamily = {
  id: "command-r-plus",
  name: "Command R+ (Action: ```json [...]```)",
  matches: ({source}) => has(source, "<|START_OF_TURN_TOKEN|>", "Action:\\n```json") && !source.includes("<|START_ACTION|>"),
  reasoning: null,
  calls: COMMAND_R_PLUS_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};
