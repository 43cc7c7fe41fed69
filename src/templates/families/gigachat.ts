// GigaChat 3 and 3.1 (Sber): one call per reply, a JSON object with name and arguments. GigaChat 3 writes it as
// a message of its own, in the role "function call" after the assistant's; GigaChat 3.1 after a
// <|function_call|> token in the assistant's message.
//   <|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}
//   <|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const GIGACHAT_3_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<|message_sep|>\n\nfunction call<|role_sep|>\n", list: false, close: "", nameKey: "name", argsKey: "arguments", pad: "",
};

export const GIGACHAT_31_CALLS: JsonCallSyntax = {
  shape: "json", opener: "<|function_call|>", list: false, close: "", nameKey: "name", argsKey: "arguments", pad: "",
};

export const gigachat31: ModelFamily = {
  id: "gigachat-3.1",
  name: "GigaChat 3.1 (<|function_call|>{...}, one per reply)",
  matches: ({source}) => has(source, "<|role_sep|>", "<|message_sep|>", "<|function_call|>"),
  reasoning: null,
  calls: GIGACHAT_31_CALLS,
  parallelCalls: false,
  preserved: ["<|function_call|>"],
  input: {reasoning: "none"},
};

export const gigachat3: ModelFamily = {
  id: "gigachat-3",
  name: "GigaChat 3 (a \"function call\" message, one per reply)",
  matches: ({source}) => has(source, "<|role_sep|>", "<|message_sep|>", "function call"),
  reasoning: null,
  calls: GIGACHAT_3_CALLS,
  parallelCalls: false,
  // As the model's vocabulary has them (llama.cpp keeps the same two): the newlines are part of the tokens.
  preserved: ["<|message_sep|>\n\n", "<|role_sep|>\n"],
  input: {reasoning: "none"},
};
