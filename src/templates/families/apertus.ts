// Swiss AI Apertus: reasoning between <|inner_prefix|> and <|inner_suffix|> (with enable_thinking), the calls as one
// JSON list of objects keyed by the tool's name.
//   <|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const APERTUS_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<|tools_prefix|>", list: true, close: "<|tools_suffix|>", nameKey: "name", argsKey: "arguments", keyedByName: true, pad: "",
};

export const apertus: ModelFamily = {
  id: "apertus",
  name: "Apertus (<|tools_prefix|>[{NAME: {...}}], <|inner_prefix|>)",
  matches: ({source}) => has(source, "<|tools_prefix|>", "<|inner_prefix|>"),
  reasoning: {open: "<|inner_prefix|>", close: "<|inner_suffix|>"},
  calls: APERTUS_CALLS,
  parallelCalls: true,
  preserved: ["<|inner_prefix|>", "<|inner_suffix|>", "<|tools_prefix|>", "<|tools_suffix|>"],
  input: {reasoning: "thought-blocks"},
};
