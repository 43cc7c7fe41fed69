// IBM Granite. Granite 4.0 / 4.1 write Hermes calls (<tool_call>\n{...}\n</tool_call>); Granite 3.3 writes one
// JSON list after <|tool_call|>.

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {HERMES_CALLS, HERMES_WRITTEN} from "./hermes.ts";
import {has, writesCall, type ModelFamily} from "./family.ts";

export const GRANITE_33_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<|tool_call|>", list: true, close: "", nameKey: "name", argsKey: "arguments", pad: "",
};

export const granite4: ModelFamily = {
  id: "granite-4",
  name: "Granite 4.0 / 4.1 (Hermes JSON calls)",
  matches: (facts) => facts.source.includes("<|start_of_role|>") && writesCall(facts, HERMES_WRITTEN, facts.source.includes("<tool_call>")),
  reasoning: null,
  calls: HERMES_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};

export const granite33: ModelFamily = {
  id: "granite-3.3",
  name: "Granite 3.3 (<|tool_call|>[...])",
  matches: ({source}) => has(source, "<|start_of_role|>", "<|tool_call|>"),
  reasoning: null,
  calls: GRANITE_33_CALLS,
  parallelCalls: true,
  preserved: ["<|tool_call|>"],
  input: {reasoning: "none"},
};
