// DeepSeek V3.2 and V4: DSML markup, one parameter per tag with an attribute saying whether its value is a string.
//   <｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n
//   </｜DSML｜invoke>\n</｜DSML｜function_calls>
// V4 names the section tool_calls instead of function_calls.

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {has, THINK, type ModelFamily} from "./family.ts";

const D = "｜DSML｜";

function dsml(section: string): XmlCallSyntax {
  return {
    shape: "xml", section: {open: `<${D}${section}>\n`, close: `</${D}${section}>`}, open: `<${D}invoke name="`, nameEnd: `">\n`,
    keyOpen: `<${D}parameter name="`, keyEnd: {string: `" string="true">`, json: `" string="false">`}, valueEnd: `</${D}parameter>\n`,
    close: `</${D}invoke>\n`, separator: "",
  };
}

export const deepseekV32: ModelFamily = {
  id: "deepseek-v3.2",
  name: "DeepSeek V3.2 (DSML calls, <think>)",
  matches: ({source}) => has(source, "DSML", "function_calls"),
  reasoning: THINK,
  calls: dsml("function_calls"),
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};

export const deepseekV4: ModelFamily = {
  ...deepseekV32,
  id: "deepseek-v4",
  name: "DeepSeek V4 (DSML calls, <think>)",
  matches: ({source}) => has(source, "DSML", "tool_calls"),
  calls: dsml("tool_calls"),
};
