// The named shape: the tool's name in markup, then the arguments as one JSON object. Mistral
// `[TOOL_CALLS]name[ARGS]{...}`, DeepSeek R1 / V3, Kimi K2 (`functions.NAME:INDEX`), Solar Open (a call id first).
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
// The streaming parser: region.ts; the arguments' grammar and boundary: ../json-arguments.ts.

import {leadIdOf, type NamedCallSyntax} from "../../core/call-syntax.ts";
import {alt, cls, EMPTY, lit, opt, rep, seq, type Expr} from "../../grammar/gbnf.ts";
import {WS, type ToolBuild} from "../../grammar/tool-build.ts";
import {anyJsonArguments, argsText, EXAMPLE_ARGS, jsonArgumentBoundary, strictJsonArguments} from "../json-arguments.ts";
import {afterOpener, badSyntax, esc, markerTexts, matchName, NAME, optional, optLit, whole} from "../literals.ts";
import type {CallShape, Piece, WrittenCall} from "../shape.ts";
import {NamedCallsRegion, namedMarkers} from "./region.ts";

const INDEX = rep(cls("[0-9]"), 1, 4);

const opener = (s: NamedCallSyntax) => (s.section ? s.section.open : s.open);

/** `[ID LEADID] PREFIX NAME [:INDEX] NAMEEND`. */
function namedCall(b: ToolBuild, s: NamedCallSyntax, names: string[]): Expr {
  const name = b.rule("tool-name", alt(...names.map(lit)));
  const id = s.leadId === undefined ? EMPTY : seq(rep(cls("[a-z0-9]"), 10, 10), lit(s.leadId));
  return seq(id, lit(s.namePrefix), name, s.nameIndex ? seq(lit(":"), INDEX) : EMPTY, lit(s.nameEnd));
}

interface Patterns {
  openFromStart: RegExp;
  open: RegExp;
  close: RegExp;
  more: RegExp;
  end: RegExp | null;
}

const patterns = new WeakMap<object, Patterns>();

function patternsOf(s: NamedCallSyntax): Patterns {
  let p = patterns.get(s);
  if (p === undefined) {
    const call = (s.leadId !== undefined ? `[a-z0-9]{10}${esc(s.leadId)}` : "") + esc(s.namePrefix) + NAME + (s.nameIndex ? ":[0-9]+" : "") + esc(s.nameEnd);
    const rest = afterOpener(s, opener(s));
    p = {
      openFromStart: whole(`\\s*${esc(s.section?.open ?? "")}${esc(s.open)}${call}`),
      open: whole(`${optional(rest.lead)}${esc(rest.text)}${call}`),
      close: new RegExp(`^${esc(s.argsEnd + s.close)}`),
      more: whole(esc(s.section ? s.separator + s.open : s.open) + call),
      end: s.section && !s.section.endsReply ? whole(esc(s.section.close)) : null,
    };
    patterns.set(s, p);
  }
  return p;
}

export const namedShape: CallShape<NamedCallSyntax> = {
  check(s) {
    if (s.open === "" && s.section === null) badSyntax(s, "a call needs an opening marker");
    if (s.nameEnd === "" || /^[a-zA-Z0-9_:-]/.test(s.nameEnd)) badSyntax(s, "nameEnd must end the name (start with a character no name or index holds)");
  },
  openers: (s) => [opener(s)],
  start: () => null,
  // Mistral's calls have no close: the next [TOOL_CALLS] or the end of the reply follows.
  hasAfterPhase: (s) => s.section !== null || s.close === "",

  openGrammar(b, s, names, fromReplyStart) {
    if (fromReplyStart) return seq(WS, lit((s.section?.open ?? "") + s.open), namedCall(b, s, names));
    const rest = afterOpener(s, opener(s));
    return seq(optLit(rest.lead), lit(rest.text), namedCall(b, s, names));
  },
  anyArguments: (_b, s) => anyJsonArguments(lit(s.argsEnd + s.close)),
  firstMatters: false,
  strictArguments: (b, s, written) => strictJsonArguments(b, written, lit(s.argsEnd + s.close)),
  jsonParameters: () => [],
  /** With a section: the separator and the next call's opening, or the section's close. A section that the end of
   * the reply closes (Solar Open), or no close and no section (Mistral): the next call's opening, or nothing at all. */
  afterGrammar(b, s, more, names) {
    if (s.section?.endsReply) return more ? opt(seq(lit(s.separator + s.open), namedCall(b, s, names))) : EMPTY;
    if (s.section !== null) {
      const end = lit(s.section.close);
      return more ? alt(seq(lit(s.separator + s.open), namedCall(b, s, names)), end) : end;
    }
    return more ? opt(seq(lit(s.open), namedCall(b, s, names))) : EMPTY;
  },
  boundary(s, phase, text) {
    const p = patternsOf(s);
    switch (phase.kind) {
      case "open": {
        const name = matchName(phase.fromReplyStart ? p.openFromStart : p.open, text);
        return name === null ? null : {kind: "named", name};
      }
      case "argument":
        return jsonArgumentBoundary(p.close, phase.strict, text);
      case "after": {
        // Mistral's "end" is the end of the reply, never seen as text.
        if (p.end?.test(text)) return {kind: "end"};
        const name = matchName(p.more, text);
        return name === null ? null : {kind: "more", name};
      }
    }
  },

  parsing(s) {
    const m = namedMarkers(s);
    // A call written without its section (DeepSeek's <｜tool▁call▁begin｜> alone) is read too.
    const openers = m.section ? [m.section.open, m.open] : [m.open];
    const strays = [...(m.section ? [m.section.close] : []), ...(m.close !== "" ? [m.close] : [])];
    return {openers, strays, start: null, region: (o, calls) => new NamedCallsRegion(calls, m, o ?? m.open)};
  },

  writeCalls(s, calls) {
    const lit = (syntax: string): Piece => ({syntax});
    const val = (client: string): Piece => ({client});
    const one = (c: WrittenCall, i: number): Piece[] => [
      lit(s.open + (s.leadId !== undefined ? leadIdOf(i) + s.leadId : "") + s.namePrefix), val(c.name),
      lit((s.nameIndex ? `:${i}` : "") + s.nameEnd), val(argsText(c.args)), lit(s.argsEnd + s.close),
    ];
    return [lit(s.section?.open ?? ""), ...calls.flatMap((c, i) => [...(i > 0 ? [lit(s.separator)] : []), ...one(c, i)]), lit(s.section?.close ?? "")];
  },

  markers: (s) => markerTexts([s.section?.open, s.section?.close, s.open, s.nameEnd, s.argsEnd, s.close, s.separator]),
  missingEdge(s) {
    if (s.section && s.section.close === "") return "the calls' section has no closing marker the renders show";
    if (s.open.trim() === "" && !s.section?.open) return "nothing marks where a call starts";
    return null;
  },
  example: (s) => `${s.section?.open ?? ""}${s.open}${s.leadId !== undefined ? leadIdOf(0) + s.leadId : ""}${s.namePrefix}get_weather` +
    `${s.nameIndex ? ":0" : ""}${s.nameEnd}${EXAMPLE_ARGS}${s.argsEnd}${s.close}${s.section?.close ?? ""}`,
};
