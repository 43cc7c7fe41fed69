// MeetKai Functionary v3.1 (Llama 3.1 based): each call is `<function=NAME>` and its arguments JSON, closed by
// </function>; the template writes several calls back to back. Built-in python (<|python_tag|>) is not supported.
//   <function=get_weather>{"city": "Paris"}</function>

import type {NamedCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const FUNCTIONARY_31_CALLS: NamedCallSyntax = {
  shape: "named", section: null, open: "<function=", namePrefix: "", nameIndex: false, nameEnd: ">", argsEnd: "", close: "</function>", separator: "",
};

export const functionaryV31: ModelFamily = {
  id: "functionary-v3.1",
  name: "Functionary v3.1 (<function=NAME>{...}</function>)",
  matches: ({source}) => has(source, "<|start_header_id|>", "<function=", "</function>") && !source.includes("<parameter="),
  reasoning: null,
  calls: FUNCTIONARY_31_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "none"},
};
