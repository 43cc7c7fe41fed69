// GLM 4.5 / 4.6 / 4.7 (and Laguna, Spark 2.5, which write the same): the name right after <tool_call>, then
// key/value tag pairs, string values raw, other values JSON; <think> reasoning (4.7's generation prompt opens the
// block when thinking is on and closes it when off).
//   4.6: <tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>
//   4.7: <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily, type TemplateFacts} from "./family.ts";

const GLM_46_CALLS: XmlCallSyntax = {
  shape: "xml", section: null, open: "<tool_call>", nameEnd: "\n", keyOpen: "<arg_key>", keyEnd: "</arg_key>\n<arg_value>",
  valueEnd: "</arg_value>\n", close: "</tool_call>", separator: "\n",
};

const GLM_47_CALLS: XmlCallSyntax = {
  shape: "xml", section: null, open: "<tool_call>", nameEnd: "", keyOpen: "<arg_key>", keyEnd: "</arg_key><arg_value>",
  valueEnd: "</arg_value>", close: "</tool_call>", separator: "",
};

/** The compact layout writes the key and value tags with nothing between them (seen in how the template renders a call). */
const compact = (facts: TemplateFacts) => facts.renderedCall?.includes("</arg_key><arg_value>") ?? false;

export const glm46: ModelFamily = {
  id: "glm-4.6",
  name: "GLM 4.5 / 4.6 (<tool_call>name<arg_key>..., <think>)",
  matches: (facts) => has(facts.source, "<arg_key>", "<arg_value>", "<tool_call>") && !compact(facts),
  reasoning: THINK,
  calls: GLM_46_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};

export const glm47: ModelFamily = {
  ...glm46,
  id: "glm-4.7",
  name: "GLM 4.7 (compact <tool_call>name<arg_key>..., <think>)",
  matches: (facts) => has(facts.source, "<arg_key>", "<arg_value>", "<tool_call>") && compact(facts),
  calls: GLM_47_CALLS,
};
