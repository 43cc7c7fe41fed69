// The recipients shape: a reply is messages addressed to recipients, and a call is a message to a tool whose body
// holds the call in an xml syntax (Muse Glimmer's ATEM). The reader (reader.ts) reads the whole reply. Calls are
// enforced as the body's xml shape enforces them, after the body's opener; from the reply's start (a required call)
// the open phase also writes the message's header, whose recipient is the same tool. The template writes earlier
// calls itself.

import type {RecipientCallSyntax} from "../../core/call-syntax.ts";
import {alt, lit, seq} from "../../grammar/gbnf.ts";
import {esc, markerTexts, matchName, NAME, optional, optLit, whole} from "../literals.ts";
import type {CallShape} from "../shape.ts";
import {xmlShape} from "../xml/index.ts";
import {xmlPieces} from "../xml/pieces.ts";
import {RecipientsReader} from "./reader.ts";

/** From the header's recipient up to the end of the call's name (the body's section and call openings). */
const callHead = (s: RecipientCallSyntax) => ({
  before: s.to,
  between: s.headerEnd + (s.body.section?.open ?? "") + s.body.open,
  after: xmlPieces(s.body).nameEnd,
});

const fromStart = new WeakMap<object, RegExp>();

/** The open phase from the reply's start, the tool named twice (the recipient and the call), the same both times. */
function openFromStart(s: RecipientCallSyntax): RegExp {
  let re = fromStart.get(s);
  if (re === undefined) {
    const h = callHead(s);
    re = whole(`${optional(s.start)}${esc(h.before)}${NAME}${esc(h.between)}\\1${esc(h.after)}`);
    fromStart.set(s, re);
  }
  return re;
}

export const recipientsShape: CallShape<RecipientCallSyntax> = {
  check(s) {
    xmlShape.check(s.body);
  },
  openers: (s) => xmlShape.openers(s.body),
  start: () => null,
  hasAfterPhase: (s) => xmlShape.hasAfterPhase(s.body),

  openGrammar(b, s, names, fromReplyStart) {
    if (!fromReplyStart) return xmlShape.openGrammar(b, s.body, names, false);
    const h = callHead(s);
    // The first message's start is the generation prompt's; after a reasoning message the model writes it.
    return seq(optLit(s.start), b.rule("tool-head", alt(...names.map((n) => lit(h.before + n + h.between + n + h.after)))));
  },
  anyArguments: (b, s, first) => xmlShape.anyArguments(b, s.body, first),
  firstMatters: xmlShape.firstMatters,
  strictArguments: (b, s, written) => xmlShape.strictArguments(b, s.body, written),
  jsonParameters: (parameters, settings) => xmlShape.jsonParameters(parameters, settings),
  afterGrammar: (b, s, more, names) => xmlShape.afterGrammar(b, s.body, more, names),
  boundary(s, phase, text) {
    if (phase.kind === "open" && phase.fromReplyStart) {
      const name = matchName(openFromStart(s), text);
      return name === null ? null : {kind: "named", name};
    }
    return xmlShape.boundary(s.body, phase, text);
  },

  parsing: () => null,
  reader: (s, opts) => new RecipientsReader(s, xmlShape.parsing(s.body, opts.tools)!, opts),

  writeCalls: () => null,
  markers: (s) => markerTexts([s.start, s.headerEnd, ...s.ends, ...xmlShape.markers(s.body)]),
  missingEdge: (s) => xmlShape.missingEdge(s.body),
  example: (s) => `${s.to.trimStart()}get_weather${s.headerEnd}${xmlShape.example(s.body)}`,
};
