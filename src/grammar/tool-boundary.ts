// Where a tool-call phase ends, read from the text. The pipeline binds one phase grammar at a time and
// calls `phaseBoundary` with everything generated since; it answers null until the phase is complete,
// then what the phase wrote. Every phase grammar ends exactly at its boundary (nothing may follow a
// complete phase), so the text is valid for its phase and ends at the boundary once it is reached: this
// only has to tell a complete phase from a prefix of one, and pull the names out.
//
// Open and after-call phases are matched whole, with a regular expression built from the syntax's literals
// (anchored at both ends: a prefix of the phase never matches). Argument phases need scanners: in JSON a
// `,` or `}` inside a value is not a boundary (tool-scan.ts); the xml and Gemma argument phases are in
// tool-boundary-markup.ts.

import {CALL_INDEX, type CallSyntax, type JsonCallSyntax} from "../core/call-syntax.ts";
import {gemmaArgument, xmlArgument} from "./tool-boundary-markup.ts";
import {scanString, scanValue, skipWs} from "./tool-scan.ts";
import {afterOpener, esc, GEMMA, HARMONY, NAME_CHARS, xmlPieces} from "./tool-syntax.ts";

export type {CallSyntax} from "../core/call-syntax.ts";

/** Which phase a grammar is for; each PhaseGrammar carries its own, to hand back to phaseBoundary. */
export type Phase =
  | {kind: "open"; fromReplyStart: boolean} // openGrammar: up to and including the tool name's end
  /** argumentGrammar: one parameter, or the close of the call. `first`: no parameter written yet; `json`
   * (xml): the parameters whose values are JSON rather than raw text. */
  | {kind: "argument"; strict: boolean; first: boolean; json: readonly string[]}
  | {kind: "after"}; // afterCallGrammar: the next call's opening, or the end of the calls

/** A tool as the phase grammars see it. `strict` means enforced: pass false for a strict tool that
 * strictEligibility refused, and it is served as a non-strict one. */
export interface ToolSpec {
  name: string;
  /** The function's parameter schema (JSON Schema); ignored for a non-strict tool. */
  parameters: unknown;
  strict: boolean;
}

export type Boundary =
  | {kind: "named"; name: string} // an open phase named the tool
  | {kind: "parameter"; name: string} // one parameter written; more follow
  | {kind: "closed"; name?: string} // the call ended; name: the parameter written in the same phase, if any (JSON-argument shapes)
  | {kind: "more"; name: string} // after a call: another call opened, naming its tool
  | {kind: "end"}; // after a call: the calls' list or section was closed

export function phaseBoundary(syntax: CallSyntax, phase: Phase, text: string): Boundary | null {
  switch (phase.kind) {
    case "open": {
      const name = matchName(patterns(syntax)[phase.fromReplyStart ? "openFromStart" : "open"], text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument":
      if (syntax.shape === "xml") return xmlArgument(syntax, phase, text);
      if (syntax.shape === "custom" && syntax.kind === "gemma4") return gemmaArgument(phase.strict, text);
      return jsonArgument(patterns(syntax).close!, phase.strict, text);
    case "after":
      return syntax.shape === "json" ? jsonAfter(syntax, text) : markupAfter(syntax, text);
  }
}

interface Patterns {
  openFromStart: RegExp;
  open: RegExp;
  /** JSON-argument shapes: what follows the arguments object's `}` until the call ends. */
  close?: RegExp;
  /** After a call (named, xml): another call's opening / the end. */
  more?: RegExp;
  end?: RegExp;
}

const cache = new WeakMap<object, Patterns>();

const NAME = `([${NAME_CHARS}]{1,64})`;
const whole = (re: string) => new RegExp(`^${re}$`);
const optional = (s: string) => (s === "" ? "" : `(?:${esc(s)})?`);

/** The regular expressions of one syntax, built once. */
function patterns(syntax: CallSyntax): Patterns {
  let p = cache.get(syntax);
  if (p === undefined) {
    p = build(syntax);
    cache.set(syntax, p);
  }
  return p;
}

function build(s: CallSyntax): Patterns {
  switch (s.shape) {
    case "json": {
      // The names of the call's members are what the open phase is recognised by (see jsonName).
      const named = s.keyedByName ? /\{\s*("(?:[^"\\]|\\.)*")\s*:/
        : new RegExp(`"${esc(s.nameKey)}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")\\s*,\\s*"${esc(s.argsKey)}"\\s*:`);
      const close = `^\\s*\\}${!s.list && s.close !== "" ? `\\s*${esc(s.close)}` : ""}`;
      return {openFromStart: named, open: named, close: new RegExp(close)};
    }
    case "named": {
      const call = (s.leadId !== undefined ? `[a-z0-9]{10}${esc(s.leadId)}` : "") + esc(s.namePrefix) + NAME + (s.nameIndex ? ":[0-9]+" : "") + esc(s.nameEnd);
      const rest = afterOpener(s);
      return {
        openFromStart: whole(`\\s*${esc(s.section?.open ?? "")}${esc(s.open)}${call}`),
        open: whole(`${optional(rest.lead)}${esc(rest.text)}${call}`),
        close: new RegExp(`^${esc(s.argsEnd + s.close)}`),
        more: whole(esc(s.section ? s.separator + s.open : s.open) + call),
        end: s.section && !s.section.endsReply ? whole(esc(s.section.close)) : undefined,
      };
    }
    case "xml": {
      const p = xmlPieces(s);
      const call = NAME + p.nameEnd.split(CALL_INDEX).map(esc).join("[0-9]+");
      const rest = afterOpener(s);
      return {
        openFromStart: whole(`\\s*${esc(s.section?.open ?? "")}${esc(s.open)}${call}`),
        open: whole(`${optional(rest.lead)}${esc(rest.text)}${call}`),
        more: whole(`${optional(p.afterLead)}${esc(s.separator + s.open)}${call}`),
        end: s.section ? whole(`${optional(p.afterLead)}${esc(s.section.close)}`) : undefined,
      };
    }
    case "custom":
      if (s.kind === "harmony") {
        const call = esc(HARMONY.prefix) + NAME + esc(HARMONY.nameEnd);
        return {openFromStart: whole(`${optional(HARMONY.start)}${esc(HARMONY.opener)}${call}`), open: whole(call), close: /^/};
      }
      return {openFromStart: whole(`\\s*${esc(GEMMA.opener + GEMMA.prefix)}${NAME}\\{`), open: whole(`${esc(GEMMA.prefix)}${NAME}\\{`)};
  }
}

/** The tool name the whole-phase pattern found (JSON: the name member's string, decoded). */
function matchName(re: RegExp, text: string): string | null {
  const m = re.exec(text);
  if (m === null) return null;
  return m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : m[1]!;
}

/** JSON list: `,` and the next call's opening up to its arguments key's colon, or `]` and the close. */
function jsonAfter(s: JsonCallSyntax, text: string): Boundary | null {
  const i = skipWs(text, 0);
  if (text[i] === "]") return new RegExp(`^\\s*\\]${s.close === "" ? "" : `\\s*${esc(s.close)}`}`).test(text) ? {kind: "end"} : null;
  if (text[i] !== ",") return null;
  const name = matchName(patterns(s).open, text);
  return name === null ? null : {kind: "more", name};
}

/** Sections (named, xml) and Mistral's unclosed calls: another call, or the section's close. Mistral's
 * "end" is the end of the reply, never seen as text. */
function markupAfter(s: CallSyntax, text: string): Boundary | null {
  const p = patterns(s);
  if (p.end?.test(text)) return {kind: "end"};
  const name = p.more ? matchName(p.more, text) : null;
  return name === null ? null : {kind: "more", name};
}

/** JSON arguments, one pair per phase (strict) or the whole object (not), then `close` (see Patterns). */
function jsonArgument(close: RegExp, strict: boolean, text: string): Boundary | null {
  const closed = (from: number, name?: string): Boundary | null =>
    close.test(text.slice(from)) ? (name === undefined ? {kind: "closed"} : {kind: "closed", name}) : null;
  let i = skipWs(text, 0);
  if (i >= text.length) return null;
  if (!strict) {
    // One phase for the whole arguments object.
    const end = scanValue(text, i);
    return end < 0 ? null : closed(end);
  }
  if (text[i] === "{") {
    // The first phase opens the object: then a pair, or `}` at once.
    i = skipWs(text, i + 1);
    if (i >= text.length) return null;
    if (text[i] === "}") return closed(i + 1);
  }
  const keyEnd = scanString(text, i);
  if (keyEnd < 0) return null;
  const name = JSON.parse(text.slice(i, keyEnd)) as string;
  i = skipWs(text, keyEnd);
  if (text[i] !== ":") return null;
  const end = scanValue(text, skipWs(text, i + 1));
  if (end < 0) return null;
  i = skipWs(text, end);
  if (text[i] === ",") return {kind: "parameter", name};
  if (text[i] === "}") return closed(i + 1, name);
  return null;
}
