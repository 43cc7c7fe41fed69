// Muse Glimmer (the ATEM protocol): a reply is messages addressed to recipients, `<|start|>assistant to=R<|message|>
// BODY<|eom|>`; to=self is reasoning, to=user the answer, to=TOOL a call written as an ATEM invoke block:
//   <|start|>assistant to=get_weather<|message|><atem:function_calls>
//   <atem:invoke name="get_weather">
//   <atem:parameter name="city">Paris</atem:parameter>
//   </atem:invoke>
//   </atem:function_calls><|eom|>
// String values are raw text, the others JSON (the template writes them so). A JSON answer binds after the answer
// message's header.

import type {RecipientCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

export const MUSE_CALLS: RecipientCallSyntax = {
  shape: "recipients", start: "<|start|>assistant", to: " to=", headerEnd: "<|message|>", ends: ["<|eom|>", "<|eot|>"],
  reasoning: "self", content: "user",
  body: {
    shape: "xml", section: {open: "<atem:function_calls>\n", close: "</atem:function_calls>"}, open: '<atem:invoke name="', nameEnd: '">\n',
    keyOpen: '<atem:parameter name="', keyEnd: '">', valueEnd: "</atem:parameter>\n", close: "</atem:invoke>\n", separator: "",
  },
};

export const museGlimmer: ModelFamily = {
  id: "muse-glimmer",
  name: "Muse Glimmer (ATEM: to=RECIPIENT messages, <atem:invoke> calls)",
  matches: ({source}) => has(source, "<atem:function_calls>", "<|message|>", "to=self"),
  reasoning: {open: " to=self<|message|>", close: "<|eom|>"},
  calls: MUSE_CALLS,
  // After reasoning, a new message opens with <|start|>assistant; a reply without reasoning starts at the recipient.
  answerLeadIn: '( "<|start|>assistant" )? " to=user<|message|>"',
  parallelCalls: true,
  preserved: ["<|start|>", "<|message|>", "<|eom|>", "<|eot|>"],
  input: {reasoning: "reasoning_content"},
};
