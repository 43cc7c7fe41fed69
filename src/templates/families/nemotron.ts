// NVIDIA Nemotron Nano v2: one JSON list of calls between <TOOLCALL> tags; <think> reasoning (the generation
// prompt opens the block). Nemotron 3 Nano writes Qwen3-Coder's XML (qwen3-coder.ts).
//   <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {THINK, type ModelFamily} from "./family.ts";

export const NEMOTRON_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<TOOLCALL>", list: true, close: "</TOOLCALL>", nameKey: "name", argsKey: "arguments", pad: "",
};

export const nemotronV2: ModelFamily = {
  id: "nemotron-v2",
  name: "Nemotron Nano v2 (<TOOLCALL>[...], <think>)",
  matches: ({source}) => source.includes("<TOOLCALL>"),
  reasoning: THINK,
  calls: NEMOTRON_CALLS,
  parallelCalls: true,
  preserved: ["<TOOLCALL>", "</TOOLCALL>"],
  input: {reasoning: "none"},
};
