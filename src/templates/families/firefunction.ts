// Fireworks FireFunction v2 (Llama 3 based): the calls as one JSON list after the word `functools`, nothing
// closes it (the end of the reply does). The template reads the tools as JSON text from `functions` and the
// date from `datetime` (as llama.cpp gives them), never `tools`.
//   functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const FIREFUNCTION_CALLS: JsonCallSyntax = {
  shape: "json", opener: "functools", list: true, close: "", nameKey: "name", argsKey: "arguments", pad: "",
};

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "%b %d %Y", llama.cpp's datetime. */
function today(): string {
  const d = new Date();
  return `${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2, "0")} ${d.getFullYear()}`;
}

export const firefunctionV2: ModelFamily = {
  id: "firefunction-v2",
  name: "FireFunction v2 (functools[...])",
  matches: ({source}) => has(source, "<|start_header_id|>", "functools["),
  reasoning: null,
  calls: FIREFUNCTION_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none", toolsText: (tools) => ({functions: JSON.stringify(tools, null, 2), datetime: today()})},
};
