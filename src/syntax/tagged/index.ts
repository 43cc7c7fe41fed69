// The tagged shape: each parameter an element named after it, nested values as nested elements, every tag after a
// mark. MiniMax M3:
//   ]<]minimax[>[<tool_call>
//   ]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>
//   ]<]minimax[>[</tool_call>
// Grammar: grammar.ts; boundaries: boundary.ts; the streaming parser: region.ts. The template writes earlier calls
// itself.

import type {TaggedCallSyntax} from "../../core/call-syntax.ts";
import {badSyntax, markerTexts} from "../literals.ts";
import type {CallShape} from "../shape.ts";
import {taggedBoundary} from "./boundary.ts";
import {taggedAfter, taggedAnyArguments, taggedOpen, taggedPieces, taggedStrictArguments} from "./grammar.ts";
import {TaggedCallsRegion} from "./region.ts";

export const taggedShape: CallShape<TaggedCallSyntax> = {
  check(s) {
    if (s.mark === "" || s.section.open.trim() === "" || s.section.close.trim() === "") badSyntax(s, "the mark and the section's tags must be set");
    if (!/^<\/[A-Za-z_:-]+>\n*$/.test(s.close)) badSyntax(s, "a call's close must be one end tag");
    if (s.nameEnd === "" || /^[A-Za-z0-9_-]/.test(s.nameEnd)) badSyntax(s, "nameEnd must end the name");
  },
  openers: (s) => [taggedPieces(s).opener],
  start: () => null,
  hasAfterPhase: () => true,

  openGrammar: taggedOpen,
  anyArguments: (b, s) => taggedAnyArguments(b, s),
  firstMatters: false,
  strictArguments: taggedStrictArguments,
  jsonParameters: () => [],
  afterGrammar: taggedAfter,
  boundary: taggedBoundary,

  parsing: (s, tools) => {
    const p = taggedPieces(s);
    return {openers: [p.opener], strays: [p.sectionClose], start: null, region: (_opener, calls) => new TaggedCallsRegion(calls, s, tools)};
  },

  writeCalls: () => null,
  markers: (s) => markerTexts([s.mark, s.mark + s.section.open, s.mark + s.section.close]),
  missingEdge: () => null,
  example: (s) => {
    const p = taggedPieces(s);
    return `${p.sectionOpen}${p.open}get_weather${s.nameEnd}${s.mark}<city>Paris${s.mark}</city>${s.mark}${s.close}${p.sectionClose}`;
  },
};
