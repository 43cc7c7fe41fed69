// Where the xml shape's phases end (see phases.ts for the protocol). Open and after phases are matched whole, with a
// regular expression built from the syntax's literals (anchored at both ends: a prefix of the phase never matches).
// Arguments: one parameter per phase, `KEYOPEN NAME KEYEND VALUE VALUEEND`, or the call's close. A raw value never
// holds its syntax's value end (tool-build.ts makes that so), so the first value end after the header ends it;
// a JSON value is scanned instead (a JSON string may hold the tag: `"</parameter>"` is a fine JSON string).

import {CALL_INDEX, VALUE_TYPE, type XmlCallSyntax} from "../../core/call-syntax.ts";
import {afterOpener, esc, matchName, NAME, optional, whole} from "../literals.ts";
import {scanValue} from "../scan.ts";
import type {ArgumentPhase, Boundary, Phase} from "../shape.ts";
import {xmlOpener, xmlPieces} from "./pieces.ts";

interface Patterns {
  openFromStart: RegExp;
  open: RegExp;
  more: RegExp;
  end: RegExp | null;
}

const patterns = new WeakMap<object, Patterns>();

function patternsOf(s: XmlCallSyntax): Patterns {
  let out = patterns.get(s);
  if (out === undefined) {
    const p = xmlPieces(s);
    const call = NAME + p.nameEnd.split(CALL_INDEX).map(esc).join("[0-9]+");
    const rest = afterOpener(s, xmlOpener(s));
    out = {
      openFromStart: whole(`\\s*${esc(s.section?.open ?? "")}${esc(s.open)}${call}`),
      open: whole(`${optional(rest.lead)}${esc(rest.text)}${call}`),
      more: whole(`${optional(p.afterLead)}${esc(s.separator + s.open)}${call}`),
      end: s.section ? whole(`${optional(p.afterLead)}${esc(s.section.close)}`) : null,
    };
    patterns.set(s, out);
  }
  return out;
}

export function xmlBoundary(s: XmlCallSyntax, phase: Phase, text: string): Boundary | null {
  const p = patternsOf(s);
  switch (phase.kind) {
    case "open": {
      const name = matchName(phase.fromReplyStart ? p.openFromStart : p.open, text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument":
      return xmlArgument(s, phase, text);
    case "after": {
      if (p.end?.test(text)) return {kind: "end"};
      const name = matchName(p.more, text);
      return name === null ? null : {kind: "more", name};
    }
  }
}

const closes = new WeakMap<object, RegExp[]>();

/** The close of a call, each newline between its tags optional: [first phase (carry cut off), later]. */
function closePatterns(s: XmlCallSyntax): RegExp[] {
  let out = closes.get(s);
  if (out === undefined) {
    const p = xmlPieces(s);
    const re = (parts: string[]) => new RegExp(`^${parts.map(esc).join("\\n?")}$`);
    out = [re([p.closeParts[0]!.slice(p.carry.length), ...p.closeParts.slice(1)]), re(p.closeParts)];
    closes.set(s, out);
  }
  return out;
}

function xmlArgument(s: XmlCallSyntax, phase: ArgumentPhase, text: string): Boundary | null {
  const p = xmlPieces(s);
  const lead = phase.first ? p.firstLead : p.lead;
  const i = lead !== "" && text.startsWith(lead) ? lead.length : 0;
  const keyOpen = phase.first ? s.keyOpen.slice(p.carry.length) : s.keyOpen;
  if (!text.startsWith(keyOpen, i)) return closePatterns(s)[phase.first ? 0 : 1]!.test(text.slice(i)) ? {kind: "closed"} : null;
  const from = i + keyOpen.length;
  const stop = text.indexOf(p.keyStop, from);
  if (stop < 0) return null;
  const name = text.slice(from, stop);
  let json: boolean;
  let at: number;
  if (p.keyEnds.string === p.keyEnds.json) {
    if (!text.startsWith(p.keyEnds.string, stop)) return null;
    json = phase.json.includes(name);
    at = stop + p.keyEnds.string.length;
  } else if (text.startsWith(p.keyEnds.string, stop)) {
    json = false;
    at = stop + p.keyEnds.string.length;
  } else {
    // The JSON form may name the value's type (VALUE_TYPE).
    const [before, after] = p.keyEnds.json.split(VALUE_TYPE);
    const m = new RegExp(`^${esc(before!)}${after === undefined ? "" : `[a-z]+${esc(after)}`}`).exec(text.slice(stop));
    if (m === null) return null;
    json = true;
    at = stop + m[0].length;
  }
  if (json) {
    const end = scanValue(text, at);
    return end >= 0 && text.startsWith(p.valueEnd, end) ? {kind: "parameter", name} : null;
  }
  return text.indexOf(p.valueEnd, at) >= 0 ? {kind: "parameter", name} : null;
}
