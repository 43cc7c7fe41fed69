// Argument-phase boundaries of the markup shapes (see tool-boundary.ts for the protocol).
//
// xml: one parameter per phase, `KEYOPEN NAME KEYEND VALUE VALUEEND`, or the call's close. A raw value never
// holds its syntax's value end (tool-build.ts makes that so), so the first value end after the header ends it;
// a JSON value is scanned instead (a JSON string may hold the tag: `"</parameter>"` is a fine JSON string).
// Gemma: `KEY:VALUE` then `,` or `}<tool_call|>`, the object's `{` written by the open phase.

import {VALUE_TYPE, type XmlCallSyntax} from "../core/call-syntax.ts";
import type {Boundary, Phase} from "./tool-boundary.ts";
import {scanGemma, scanValue} from "./tool-scan.ts";
import {esc, GEMMA, xmlPieces} from "./tool-syntax.ts";

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

export function xmlArgument(s: XmlCallSyntax, phase: Extract<Phase, {kind: "argument"}>, text: string): Boundary | null {
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

const GEMMA_KEY = /^[A-Za-z0-9_.-]+/;

export function gemmaArgument(strict: boolean, text: string): Boundary | null {
  const closedAt = (i: number, name?: string): Boundary | null =>
    text.startsWith(GEMMA.close, i) ? (name === undefined ? {kind: "closed"} : {kind: "closed", name}) : null;
  if (!strict) {
    // The whole object in one phase; its `{` is the open phase's.
    const end = scanGemma("{" + text, 0);
    return end < 0 ? null : closedAt(end - 1);
  }
  if (text.startsWith("}")) return closedAt(1);
  const key = GEMMA_KEY.exec(text);
  if (key === null || text[key[0].length] !== ":") return null;
  const end = scanGemma(text, key[0].length + 1);
  if (end < 0) return null;
  if (text[end] === ",") return {kind: "parameter", name: key[0]};
  return text[end] === "}" ? closedAt(end + 1, key[0]) : null;
}
