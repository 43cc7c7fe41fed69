// Mistral's tokenizer v7+ models: Mistral Small 3.2, Devstral, Ministral 3 (with [THINK] reasoning):
//   [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{...}
// Each call opens with [TOOL_CALLS]; nothing closes it (the next call or the end of the reply does). Mistral
// Small 3.2 renders an id between name and arguments ([CALL_ID]abc123XYZ), which the parser also reads. Its
// templates accept only 9-alphanumeric tool-call ids. Mistral Nemo's older form ([TOOL_CALLS][{...}]) is
// mistral-nemo.ts.

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";
import {nineAlphanumerics} from "./ids.ts";

export const MISTRAL_CALLS: NamedCallSyntax = {
  shape: "named", section: null, open: "[TOOL_CALLS]", namePrefix: "", nameIndex: false, idMarker: "[CALL_ID]", nameEnd: "[ARGS]", argsEnd: "",
  close: "", separator: "",
};

export const mistral: ModelFamily = {
  id: "mistral",
  name: "Mistral Small 3.2, Devstral, Ministral 3 ([TOOL_CALLS]name[ARGS]{...}, [THINK])",
  matches: ({source}) => has(source, "[TOOL_CALLS]", "[ARGS]"),
  reasoning: {open: "[THINK]", close: "[/THINK]"},
  calls: MISTRAL_CALLS,
  parallelCalls: true,
  preserved: ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"],
  input: {reasoning: "content-blocks", toolCallId: nineAlphanumerics},
};
