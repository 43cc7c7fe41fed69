// The xml shape: each parameter written in markup, string values raw. Qwen3-Coder / Qwen3.5, Seed-OSS, GLM 4.x,
// MiniMax M2, DeepSeek V3.2 (DSML), Kimi K3.
//   <tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>
// Grammar: grammar.ts; boundaries: boundary.ts; the streaming parser: region.ts (values typed by values.ts).

import {CALL_INDEX, jsonTypeName, VALUE_TYPE, type XmlCallSyntax} from "../../core/call-syntax.ts";
import {ToolBuild} from "../../grammar/tool-build.ts";
import {JsonCallsRegion, TaggedCallRegion} from "../json/region.ts";
import {parseArgs} from "../json-arguments.ts";
import {markerTexts} from "../literals.ts";
import type {CallShape, Piece, WrittenCall} from "../shape.ts";
import {xmlBoundary} from "./boundary.ts";
import {xmlAfter, xmlAnyArguments, xmlOpen, xmlStrictArguments} from "./grammar.ts";
import {checkXml, xmlOpener} from "./pieces.ts";
import {XmlCallsRegion, xmlMarkers} from "./region.ts";

export const xmlShape: CallShape<XmlCallSyntax> = {
  check: checkXml,
  openers: (s) => [xmlOpener(s)],
  start: () => null,
  hasAfterPhase: (s) => s.section !== null,

  openGrammar: xmlOpen,
  anyArguments: xmlAnyArguments,
  firstMatters: true,
  strictArguments: xmlStrictArguments,
  jsonParameters: (parameters, settings) => {
    const b = new ToolBuild(parameters, settings);
    return b.props.filter((p) => !b.isRaw(p)).map((p) => p.key);
  },
  afterGrammar: xmlAfter,
  boundary: xmlBoundary,

  parsing(s, tools) {
    const m = xmlMarkers(s);
    const first = m.open[0]!;
    // A bare inner opener (Qwen's <function= without <tool_call>) opens a call too.
    const bare = m.section === null && m.open.length > 1 ? [m.open[m.open.length - 1]!] : [];
    const openers = m.section ? [m.section.open] : [first, ...bare];
    const strays = m.section ? [m.section.close] : [m.close[m.close.length - 1]!];
    const closeTag = m.close[m.close.length - 1]!;
    return {
      openers, strays, start: null,
      region: (opener, calls) => {
        const xml = () => new XmlCallsRegion(calls, tools, m, opener ?? first);
        // Models trained on both forms sometimes write a Hermes JSON object after <tool_call>.
        if (opener === first && m.section === null && m.open.length > 1) {
          return new TaggedCallRegion(() => new JsonCallsRegion(calls, {close: closeTag, wholeReply: false, inList: false}), xml);
        }
        return xml();
      },
    };
  },

  writeCalls(s, calls) {
    const lit = (syntax: string): Piece => ({syntax});
    const val = (client: string): Piece => ({client});
    const one = (c: WrittenCall, i: number): Piece[] => {
      const params = Object.entries(parseArgs(c.args) ?? {}).flatMap(([key, v]) => {
        const keyEnd = typeof s.keyEnd === "string" ? s.keyEnd : typeof v === "string" ? s.keyEnd.string
          : s.keyEnd.json.replace(VALUE_TYPE, jsonTypeName(v));
        // String values raw, the others as JSON (what the parser reads back).
        return [lit(s.keyOpen), val(key), lit(keyEnd), val(typeof v === "string" ? v : JSON.stringify(v)), lit(s.valueEnd)];
      });
      return [lit(s.open), val(c.name), lit(s.nameEnd.replace(CALL_INDEX, String(i + 1))), ...params, lit(s.close)];
    };
    return [lit(s.section?.open ?? ""), ...calls.flatMap((c, i) => [...(i > 0 ? [lit(s.separator)] : []), ...one(c, i)]), lit(s.section?.close ?? "")];
  },

  markers: (s) => markerTexts([s.section?.open, s.section?.close, s.open, s.nameEnd, s.keyOpen, s.valueEnd, s.close, s.separator,
    typeof s.keyEnd === "string" ? s.keyEnd : null]),
  missingEdge(s) {
    if (s.section && s.section.close === "") return "the calls' section has no closing marker the renders show";
    if (s.open.trim() === "" && !s.section?.open) return "nothing marks where a call starts";
    return null;
  },
  example(s) {
    const keyEnd = typeof s.keyEnd === "string" ? s.keyEnd : s.keyEnd.string;
    const name = `${s.open}get_weather${s.nameEnd.replace(CALL_INDEX, "1")}`;
    return `${s.section?.open ?? ""}${name}${s.keyOpen}city${keyEnd}Paris${s.valueEnd}${s.close}${s.section?.close ?? ""}`;
  },
};
