// ByteDance Seed-OSS: XML calls like Qwen3-Coder's in their own tags, values without layout newlines, and
// <seed:think> reasoning.
//   <seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import type {ModelFamily} from "./family.ts";

export const SEED_CALLS: XmlCallSyntax = {
  shape: "xml", section: null, open: "<seed:tool_call>\n<function=", nameEnd: ">\n", keyOpen: "<parameter=", keyEnd: ">",
  valueEnd: "</parameter>\n", close: "</function>\n</seed:tool_call>", separator: "\n",
};

export const seedOss: ModelFamily = {
  id: "seed-oss",
  name: "Seed-OSS (<seed:tool_call>, <seed:think>)",
  matches: ({source}) => source.includes("<seed:tool_call>"),
  reasoning: {open: "<seed:think>", close: "</seed:think>"},
  calls: SEED_CALLS,
  parallelCalls: true,
  preserved: [],
  input: {reasoning: "reasoning_content"},
};
