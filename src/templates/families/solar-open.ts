// Upstage Solar Open: every part of a reply is a message of its own after <|begin|>assistant: reasoning in
// <|think|> ... <|end|>, text in <|content|> ... <|end|>, calls in <|tool_calls|> ... <|calls|>, each call with an id
// before its name. The message headers are layout.
//   <|tool_calls|><|tool_call:begin|>0000000000<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Paris"}<|tool_call:end|><|calls|>

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const SOLAR_CALLS: NamedCallSyntax = {
  shape: "named", section: {open: "<|tool_calls|>", close: "<|calls|>", endsReply: true}, open: "<|tool_call:begin|>", leadId: "<|tool_call:name|>",
  namePrefix: "", nameIndex: false, nameEnd: "<|tool_call:args|>", argsEnd: "", close: "<|tool_call:end|>", separator: "",
};

export const solarOpen: ModelFamily = {
  id: "solar-open",
  name: "Solar Open (<|tool_calls|> with call ids, <|think|>)",
  matches: ({source}) => has(source, "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>"),
  reasoning: {open: "<|think|>", close: "<|end|>"},
  calls: SOLAR_CALLS,
  parallelCalls: true,
  // <|calls|> ends the generation. <|flush|> is never read: with it and <|calls|> in the vocabulary, llama.cpp does
  // not take <|end|> for an end of generation (llama-vocab.cpp's Solar Open rule), as on the real model.
  preserved: ["<|think|>", "<|end|>", "<|begin|>", "<|content|>", "<|tool_calls|>", "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>",
    "<|tool_call:end|>", "<|calls|>", "<|flush|>"],
  layout: ["<|begin|>assistant<|content|>", "<|end|>", "<|begin|>assistant"],
  input: {reasoning: "reasoning"},
};
