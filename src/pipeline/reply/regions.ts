// From a family's CallSyntax to what the reply parser needs: the markers that open a call region anywhere in
// content, the close markers that are dropped when they appear outside one, a matcher for syntaxes whose calls
// can only start the content (the generic form, Llama 3), and the region that reads what follows an opener.

import type {CallSyntax, JsonCallSyntax} from "../../core/call-syntax.ts";
import {Gemma4CallRegion, GEMMA_CALL_CLOSE, GEMMA_CALL_OPEN} from "./gemma4.ts";
import {JsonCallsRegion, TaggedCallRegion} from "./json-call.ts";
import {NamedCallsRegion, namedMarkers} from "./named-call.ts";
import {type CallEmitter, type CallRegion, isJsonWs} from "./sink.ts";
import type {ToolSpec} from "./types.ts";
import {XmlCallsRegion, xmlMarkers} from "./xml-call.ts";

export interface CallParsing {
  /** Markers that open a call region anywhere in content. */
  openers: readonly string[];
  /** Close markers dropped when they appear in content (a stray close is still syntax). */
  strays: readonly string[];
  /** For calls that can only start the content: matches the start, incrementally (see matchStart). */
  start: {pieces: readonly string[]; consumed: boolean} | null;
  /** The region after `opener` (null: started by `start`). */
  region(opener: string | null, calls: CallEmitter): CallRegion;
}

export function callParsing(syntax: Exclude<CallSyntax, {shape: "custom"; kind: "harmony"}>, tools: readonly ToolSpec[]): CallParsing {
  switch (syntax.shape) {
    case "json":
      return jsonParsing(syntax, tools);
    case "named": {
      const m = namedMarkers(syntax);
      // A call written without its section (DeepSeek's <｜tool▁call▁begin｜> alone) is read too.
      const openers = m.section ? [m.section.open, m.open] : [m.open];
      const strays = [...(m.section ? [m.section.close] : []), ...(m.close !== "" ? [m.close] : [])];
      return {openers, strays, start: null, region: (opener, calls) => new NamedCallsRegion(calls, m, opener ?? m.open)};
    }
    case "xml": {
      const m = xmlMarkers(syntax);
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
    }
    case "custom":
      return {openers: [GEMMA_CALL_OPEN], strays: [GEMMA_CALL_CLOSE], start: null, region: (_opener, calls) => new Gemma4CallRegion(calls)};
  }
}

function jsonParsing(s: JsonCallSyntax, tools: readonly ToolSpec[]): CallParsing {
  const close = s.close.trim();
  if (s.opener === null) {
    const start = s.start ?? {pieces: ["{"], consumed: false};
    return {
      openers: [], strays: [], start,
      region: (_opener, calls) => new JsonCallsRegion(calls, {close, wholeReply: start.consumed, inList: start.consumed && s.list}),
    };
  }
  const opener = s.opener.trim();
  const other = s.alsoReads ? xmlMarkers(s.alsoReads) : null;
  // A close that is ordinary markdown (Command R+'s ```) is not dropped from text outside a call: code fences are.
  const stray = close !== "" && !/^`+$/.test(close);
  return {
    openers: [opener], strays: stray ? [close] : [], start: null,
    region: (_o, calls) => {
      const json = () => new JsonCallsRegion(calls, {close, wholeReply: false, inList: false, keyedByName: s.keyedByName === true});
      if (other === null || other.open[0] !== opener) return json();
      return new TaggedCallRegion(json, () => new XmlCallsRegion(calls, tools, other, opener));
    },
  };
}

/**
 * Matches the start pieces incrementally, JSON whitespace allowed before each: the matched length, "partial"
 * while the text could still become it, "no" once it cannot.
 */
export function matchStart(s: string, pieces: readonly string[]): number | "partial" | "no" {
  let i = 0;
  for (const piece of pieces) {
    while (i < s.length && isJsonWs(s[i]!)) i++;
    for (const ch of piece) {
      if (i >= s.length) return "partial";
      if (s[i++] !== ch) return "no";
    }
  }
  return i;
}
