// gpt-oss (OpenAI's harmony format): a reply is a run of messages, each a header and a body.
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
// analysis is reasoning, final is content, commentary addressed to=functions.NAME is a call (commentary without
// a recipient is a preamble, shown as content). The channel markers are control tokens, kept in the parser's view.
// A JSON answer binds after the final channel's header.
// Earlier reasoning goes to the template as `thinking`.

import {has, type ModelFamily} from "./family.ts";

export const gptOss: ModelFamily = {
  id: "gpt-oss",
  name: "gpt-oss (harmony channels)",
  matches: ({source}) => has(source, "<|channel|>", "<|message|>", "<|start|>"),
  reasoning: {open: "<|channel|>analysis<|message|>", close: "<|end|>"},
  calls: {shape: "custom", kind: "harmony"},
  // After reasoning, a new message opens with <|start|>assistant; a reply without reasoning starts at the channel.
  answerLeadIn: '( "<|start|>assistant" )? "<|channel|>final<|message|>"',
  parallelCalls: false,
  preserved: ["<|channel|>", "<|message|>", "<|start|>", "<|end|>", "<|constrain|>", "<|call|>", "<|return|>"],
  input: {reasoning: "thinking"},
};
