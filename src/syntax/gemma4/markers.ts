// Gemma 4's call markup: `<|tool_call>call:NAME{k:v,...}<tool_call|>`, strings between QUOTE marks.

export const GEMMA = {opener: "<|tool_call>", prefix: "call:", close: "<tool_call|>", quote: '<|"|>'} as const;
