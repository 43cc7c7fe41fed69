// The recipients shape: a reply is messages addressed to recipients, and a call is a message to a tool. Its body
// holds the call in an xml syntax (Muse Glimmer's ATEM), or the arguments as one JSON object (Functionary v3.2). The
// reader (reader.ts) reads the whole reply. The template writes earlier calls itself.
//
// Enforcing a call: an xml body is enforced as the xml shape does it, after the body's opener; a JSON body after the
// message's start (Functionary's `>>>`), whose open phase is the recipient and the header's end: a tool's name, or the
// content's recipient, which ends the phase with no call (a `text` boundary: free text follows). From the reply's start
// (a required call) the open phase writes the whole header, and, for an xml body, the call's opening naming the same
// tool.

import type {RecipientCallSyntax, XmlCallSyntax} from "../../core/call-syntax.ts";
import {alt, EMPTY, lit, seq, type Expr} from "../../grammar/gbnf.ts";
import type {ToolBuild} from "../../grammar/tool-build.ts";
import {anyJsonArguments, EXAMPLE_ARGS, jsonArgumentBoundary, strictJsonArguments} from "../json-arguments.ts";
import {esc, markerTexts, matchName, NAME, optional, optLit, whole} from "../literals.ts";
import type {Boundary, CallShape, Phase} from "../shape.ts";
import {xmlShape} from "../xml/index.ts";
import {xmlPieces} from "../xml/pieces.ts";
import {RecipientsReader} from "./reader.ts";

const patterns = new WeakMap<object, {fromStart: RegExp; afterStart: RegExp; content: RegExp}>();

/** The open phase's patterns: from the reply's start (the tool named twice with an xml body, the same both times),
 * after the message start, and the content's recipient there. */
function patternsOf(s: RecipientCallSyntax) {
  let p = patterns.get(s);
  if (p === undefined) {
    const xml = s.body === "json" ? null : s.body;
    const tail = xml === null ? esc(s.headerEnd) : `${esc(s.headerEnd + (xml.section?.open ?? "") + xml.open)}\\1${esc(xmlPieces(xml).nameEnd)}`;
    p = {
      fromStart: whole(`${optional(s.start)}${esc(s.to)}${NAME}${tail}`),
      afterStart: whole(`${esc(s.to)}${NAME}${esc(s.headerEnd)}`),
      content: whole(esc(s.to + s.content + s.headerEnd)),
    };
    patterns.set(s, p);
  }
  return p;
}

const toolName = (b: ToolBuild, names: string[]) => b.rule("tool-name", alt(...names.map(lit)));

/** A JSON body: the call is complete at the arguments' `}` (the next message or the end of the reply follows). */
function jsonBoundary(s: RecipientCallSyntax, phase: Phase, text: string): Boundary | null {
  const p = patternsOf(s);
  switch (phase.kind) {
    case "open": {
      if (!phase.fromReplyStart && p.content.test(text)) return {kind: "text"};
      const name = matchName(phase.fromReplyStart ? p.fromStart : p.afterStart, text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument":
      return jsonArgumentBoundary(/^/, phase.strict, text);
    case "after":
      throw new TypeError("a JSON message body has no after-call phase");
  }
}

const xmlOf = (s: RecipientCallSyntax): XmlCallSyntax | null => (s.body === "json" ? null : s.body);

export const recipientsShape: CallShape<RecipientCallSyntax> = {
  check(s) {
    const xml = xmlOf(s);
    if (xml !== null) xmlShape.check(xml);
  },
  openers: (s) => {
    const xml = xmlOf(s);
    return xml === null ? [s.start] : xmlShape.openers(xml);
  },
  start: () => null,
  hasAfterPhase: (s) => {
    const xml = xmlOf(s);
    return xml !== null && xmlShape.hasAfterPhase(xml);
  },

  openGrammar(b, s, names, fromReplyStart): Expr {
    const xml = xmlOf(s);
    if (fromReplyStart) {
      // The first message's start is the generation prompt's; after a reasoning message the model writes it.
      if (xml === null) return seq(optLit(s.start), lit(s.to), toolName(b, names), lit(s.headerEnd));
      const between = s.headerEnd + (xml.section?.open ?? "") + xml.open;
      const after = xmlPieces(xml).nameEnd;
      return seq(optLit(s.start), b.rule("tool-head", alt(...names.map((n) => lit(s.to + n + between + n + after)))));
    }
    if (xml !== null) return xmlShape.openGrammar(b, xml, names, false);
    // After the message start: a tool, or the content's recipient (no call after all).
    return seq(lit(s.to), alt(seq(toolName(b, names), lit(s.headerEnd)), lit(s.content + s.headerEnd)));
  },
  anyArguments: (b, s, first) => {
    const xml = xmlOf(s);
    return xml === null ? anyJsonArguments(EMPTY) : xmlShape.anyArguments(b, xml, first);
  },
  firstMatters: true,
  strictArguments: (b, s, written) => {
    const xml = xmlOf(s);
    return xml === null ? strictJsonArguments(b, written, EMPTY) : xmlShape.strictArguments(b, xml, written);
  },
  // Read by the xml boundary only (a JSON body scans every value as JSON).
  jsonParameters: (parameters, settings) => xmlShape.jsonParameters(parameters, settings),
  afterGrammar: (b, s, more, names) => {
    const xml = xmlOf(s);
    if (xml === null) throw new TypeError("a JSON message body has no after-call phase");
    return xmlShape.afterGrammar(b, xml, more, names);
  },
  boundary(s, phase, text) {
    const xml = xmlOf(s);
    if (xml === null) return jsonBoundary(s, phase, text);
    if (phase.kind === "open" && phase.fromReplyStart) {
      const name = matchName(patternsOf(s).fromStart, text);
      return name === null ? null : {kind: "named", name};
    }
    const b = xmlShape.boundary(xml, phase, text);
    // The block's end is the message's: other messages (more calls, the answer) may follow, as free text.
    return b?.kind === "end" ? {kind: "text"} : b;
  },

  parsing: () => null,
  reader: (s, opts) => {
    const xml = xmlOf(s);
    return new RecipientsReader(s, xml === null ? null : xmlShape.parsing(xml, opts.tools)!, opts);
  },

  writeCalls: () => null,
  markers: (s) => {
    const xml = xmlOf(s);
    return markerTexts([s.start, s.headerEnd, ...s.ends, ...(xml === null ? [] : xmlShape.markers(xml))]);
  },
  missingEdge: (s) => {
    const xml = xmlOf(s);
    return xml === null ? null : xmlShape.missingEdge(xml);
  },
  example: (s) => {
    const xml = xmlOf(s);
    return `${s.to.trimStart()}get_weather${s.headerEnd}${xml === null ? EXAMPLE_ARGS : xmlShape.example(xml)}`;
  },
};
