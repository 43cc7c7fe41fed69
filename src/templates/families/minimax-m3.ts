// MiniMax M3: reasoning between <mm:think> and </mm:think> (a reply that does not think starts with </mm:think>), the
// calls in one section, each parameter an element named after it, nested values as nested elements, every tag after
// the ]<]minimax[>[ mark (a special token):
//   ]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>
//   ]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>

import type {TaggedCallSyntax} from "../../core/call-syntax.ts";
import {has, type ModelFamily} from "./family.ts";

const MARK = "]<]minimax[>[";

export const MINIMAX_M3_CALLS: TaggedCallSyntax = {
  shape: "tagged", mark: MARK, section: {open: "<tool_call>\n", close: "</tool_call>"}, open: '<invoke name="', nameEnd: '">',
  close: "</invoke>\n", item: "item",
};

export const minimaxM3: ModelFamily = {
  id: "minimax-m3",
  name: "MiniMax M3 (]<]minimax[>[<invoke name=...> with a tag per parameter)",
  matches: ({source}) => has(source, MARK, "<invoke name=", "<mm:think>"),
  reasoning: {open: "<mm:think>", close: "</mm:think>"},
  calls: MINIMAX_M3_CALLS,
  parallelCalls: true,
  preserved: [MARK, "<mm:think>", "</mm:think>"],
  // A reply that does not think starts with the block's close: layout, never content.
  layout: ["</mm:think>"],
  input: {reasoning: "reasoning_content"},
};
