// Llama 3.1 / 3.2 / 3.3: a call is the whole reply, a bare JSON object with "parameters" (the template's words:
// 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}').
// One call per reply (the template refuses to render two). Built-in tools (<|python_tag|>) are not supported.

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const LLAMA3_CALLS: JsonCallSyntax = {
  shape: "json", opener: null, start: {pieces: ["{", '"name"'], consumed: false}, list: false, close: "", nameKey: "name", argsKey: "parameters", pad: "",
};

export const llama3: ModelFamily = {
  id: "llama3",
  name: "Llama 3.1 / 3.2 / 3.3 (JSON call as the whole reply)",
  matches: ({source}) => has(source, "<|start_header_id|>", '"parameters": ') && !has(source, ">>>") && !source.includes("functools") &&
    !source.includes("<function="),
  reasoning: null,
  calls: LLAMA3_CALLS,
  parallelCalls: false,
  preserved: [],
  input: {reasoning: "none"},
};
