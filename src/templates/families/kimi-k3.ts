// Kimi K3: XTML, tags written <|open|>NAME attrs<|sep|> ... <|close|>NAME<|sep|>. The reply is a think section (the
// generation prompt opens it), a response section, then the calls: one tag per argument, string values raw, the
// others JSON, each with its JSON type in an attribute; calls are numbered from 1.
//   <|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Paris
//   <|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>

import {CALL_INDEX, VALUE_TYPE, type XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const KIMI_K3_CALLS: XmlCallSyntax = {
  shape: "xml", section: {open: "<|open|>tools<|sep|>", close: "<|close|>tools<|sep|>"}, open: "<|open|>call tool=\"",
  nameEnd: `" index="${CALL_INDEX}"<|sep|>`, keyOpen: "<|open|>argument key=\"",
  keyEnd: {string: "\" type=\"string\"<|sep|>", json: `" type="${VALUE_TYPE}"<|sep|>`}, valueEnd: "<|close|>argument<|sep|>",
  close: "<|close|>call<|sep|>", separator: "",
};

export const kimiK3: ModelFamily = {
  id: "kimi-k3",
  name: "Kimi K3 (XTML <|open|>call tags, a think section)",
  matches: ({source}) => has(source, "<|open|>", "<|close|>", "<|end_of_msg|>"),
  reasoning: {open: "<|open|>think<|sep|>", close: "<|close|>think<|sep|>"},
  calls: KIMI_K3_CALLS,
  parallelCalls: true,
  // Only the markers are special tokens (as llama.cpp keeps them): tag names are words.
  preserved: ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"],
  layout: ["<|open|>response<|sep|>", "<|close|>response<|sep|>", "<|close|>message<|sep|>", "<|end_of_msg|>"],
  // Arguments as an object: the template writes a string as one JSON block, which the model is not trained to write.
  input: {reasoning: "reasoning_content", argumentsAsObject: true},
};
