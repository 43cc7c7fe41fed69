// gpt-oss (harmony): the call header, the recipient's namespace, and what ends the header.

export const HARMONY = {
  /** Written after an earlier message (reasoning) ended; the first message of a reply has no `<|start|>`. */
  start: "<|start|>assistant",
  opener: "<|channel|>commentary to=",
  prefix: "functions.",
  nameEnd: " <|constrain|>json<|message|>",
} as const;
