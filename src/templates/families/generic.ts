// Templates with no tool-call syntax of their own (SmolLM2, Phi-3.5, Gemma 2, and any family svc does not know):
// the tools and the generic JSON form are taught in a system message (pipeline/reply/generic-prompt.ts), and the
// whole reply is read as {"tool_calls": [...]} when it starts that way. Reasoning is read in <think> blocks when
// the template knows thinking. Detection falls back to this family.

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {THINK, type ModelFamily} from "./family.ts";

/** The generic form, as the parser and the grammar read it: a reply that is exactly {"tool_calls": [...]}. */
export const GENERIC_CALLS: JsonCallSyntax = {
  shape: "json", opener: null, start: {pieces: ["{", '"tool_calls"', ":", "["], consumed: true}, list: true, close: "}",
  nameKey: "name", argsKey: "arguments", pad: "",
};

export const generic: ModelFamily = {
  id: "generic",
  name: "Any other template (generic JSON calls taught in a system message)",
  matches: () => true,
  // The de-facto markers: read when the template mentions them or has an enable_thinking switch (reply-plan.ts).
  reasoning: THINK,
  calls: null,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
