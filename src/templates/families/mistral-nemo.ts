// Mistral Nemo (tokenizer v3): the calls are one JSON list after [TOOL_CALLS], nothing closes it.
//   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"}]

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import type {ModelFamily} from "./family.ts";
import {nineAlphanumerics} from "./ids.ts";

export const NEMO_CALLS: JsonCallSyntax = {
  shape: "json", opener: "[TOOL_CALLS]", list: true, close: "", nameKey: "name", argsKey: "arguments", pad: "",
};

export const mistralNemo: ModelFamily = {
  id: "mistral-nemo",
  name: "Mistral Nemo ([TOOL_CALLS][{...}])",
  matches: ({source}) => source.includes("[TOOL_CALLS]"),
  reasoning: null,
  calls: NEMO_CALLS,
  parallelCalls: true,
  preserved: ["[TOOL_CALLS]"],
  input: {reasoning: "none", toolCallId: nineAlphanumerics},
};
