// Phase grammars of the shapes whose arguments are one JSON object: `json` (the call is a JSON object holding
// the name and the arguments: Hermes, the generic form, Llama 3, Command R, the JSON lists), `named` (the name
// in markup, then the arguments object: Mistral, DeepSeek, Kimi) and harmony (gpt-oss). See tool-calls.ts for
// the phases; what differs here is the opening and what closes a call after the arguments' `}`.
//
// Whitespace: JSON whitespace (the bounded WS) goes wherever JSON allows it, and between a json syntax's
// markers and its JSON (its `pad`, Hermes' "\n", is whitespace: WS covers it, as the hermes grammar always
// did). The markup of named and harmony syntaxes is written exactly.

import type {JsonCallSyntax, NamedCallSyntax} from "../core/call-syntax.ts";
import {alt, cls, EMPTY, lit, opt, ref, rep, seq, type Expr} from "./gbnf.ts";
import {namePart} from "./generate.ts";
import {WS, type ToolBuild} from "./tool-build.ts";
import {afterOpener, HARMONY, optLit} from "./tool-syntax.ts";

/** The JSON-argument syntaxes (custom "harmony" stands for gpt-oss). */
export type JsonArgsSyntax = JsonCallSyntax | NamedCallSyntax | "harmony";

const INDEX = rep(cls("[0-9]"), 1, 4);

/** A json call object's opening up to the colon after its arguments key: `{ ["ID": "0",] "NAME": "get", "ARGS":`. */
function callOpening(b: ToolBuild, s: JsonCallSyntax, names: string[]): Expr {
  const name = b.rule("tool-name", alt(...names.map((n) => lit(`"${n}"`))));
  if (s.keyedByName) return seq(WS, lit("{"), WS, name, WS, lit(":"));
  const key = (k: string) => seq(lit(JSON.stringify(k)), WS, lit(":"), WS);
  // Command R numbers its calls; any run of digits is accepted (the grammar does not count the calls).
  const id = s.idKey === undefined ? EMPTY : seq(key(s.idKey), lit('"'), INDEX, lit('"'), WS, lit(","), WS);
  return seq(WS, lit("{"), WS, id, key(s.nameKey), name, WS, lit(","), WS, lit(JSON.stringify(s.argsKey)), WS, lit(":"));
}

/** `PREFIX NAME [:INDEX] NAMEEND` of a named syntax. */
function namedCall(b: ToolBuild, s: NamedCallSyntax, names: string[]): Expr {
  const name = b.rule("tool-name", alt(...names.map(lit)));
  const id = s.leadId === undefined ? EMPTY : seq(rep(cls("[a-z0-9]"), 10, 10), lit(s.leadId));
  return seq(id, lit(s.namePrefix), name, s.nameIndex ? seq(lit(":"), INDEX) : EMPTY, lit(s.nameEnd));
}

export function jsonArgsOpen(b: ToolBuild, s: JsonArgsSyntax, names: string[], fromReplyStart: boolean): Expr {
  if (s === "harmony") {
    const call = seq(lit(HARMONY.prefix), b.rule("tool-name", alt(...names.map(lit))), lit(HARMONY.nameEnd));
    // From the reply's start: the first message has no <|start|>; after a reasoning message it has.
    return fromReplyStart ? seq(optLit(HARMONY.start), lit(HARMONY.opener), call) : call;
  }
  if (s.shape === "named") {
    if (fromReplyStart) return seq(WS, lit((s.section?.open ?? "") + s.open), namedCall(b, s, names));
    const rest = afterOpener(s);
    return seq(optLit(rest.lead), lit(rest.text), namedCall(b, s, names));
  }
  const call = callOpening(b, s, names);
  const list = s.list ? seq(WS, lit("[")) : EMPTY;
  if (s.opener !== null) return seq(fromReplyStart ? seq(WS, lit(s.opener)) : EMPTY, list, call);
  // No opener: the calls start the reply (the generic form's envelope, or Llama 3's bare object). Not from
  // the reply's start means after a `,` in the list: another call object.
  if (!fromReplyStart) return call;
  const start = s.start!;
  if (!start.consumed) return seq(list, call);
  const envelope = seq(...start.pieces.map((piece) => seq(WS, lit(piece))));
  return seq(envelope, s.list && start.pieces[start.pieces.length - 1] !== "[" ? seq(WS, lit("[")) : EMPTY, call);
}

/** What follows the arguments object's `}` until the call is closed. */
function afterArguments(s: JsonArgsSyntax): Expr {
  if (s === "harmony") return EMPTY; // <|call|> ends the generation: the grammar is complete at the `}`
  if (s.shape === "named") return lit(s.argsEnd + s.close);
  // The call object's own `}`; a list's `]` and close belong to the after-call phase.
  return seq(WS, lit("}"), !s.list && s.close !== "" ? seq(WS, lit(s.close)) : EMPTY);
}

/** A non-strict tool's arguments: any JSON object, then the close. */
export function jsonAnyArguments(s: JsonArgsSyntax): Expr {
  return seq(WS, ref("object"), afterArguments(s));
}

/** One parameter `"P": VALUE` then `,` (some left) or the close (every required one written); the first phase
 * opens the object, and may close it at once when nothing is required. */
export function jsonStrictArguments(b: ToolBuild, s: JsonArgsSyntax, written: string[]): Expr {
  const done = new Set(written);
  const left = b.props.filter((p) => !done.has(p.key));
  const requiredLeft = left.filter((p) => p.required).map((p) => p.key);
  const first = done.size === 0;
  // After a `,` a pair must follow; the phase before offers `,` only when one is left.
  if (!first && left.length === 0) throw new TypeError("every parameter is written: no phase follows the last one");
  const close = seq(lit("}"), afterArguments(s));
  const pairs = left.map((p) => {
    const delims: Expr[] = [];
    if (left.length > 1) delims.push(lit(","));
    if (requiredLeft.every((r) => r === p.key)) delims.push(close);
    return b.rule(`arg-${namePart(p.key, "key")}`, seq(lit(JSON.stringify(p.key)), WS, lit(":"), WS, b.jsonValue(p), WS, alt(...delims)));
  });
  const choices = first && requiredLeft.length === 0 ? [...pairs, close] : pairs;
  return seq(WS, first ? seq(lit("{"), WS) : EMPTY, alt(...choices));
}

/**
 * After a call. json lists: `,` and the next call's opening ("more"), or `]` and the close ("end"). Named with
 * a section: the separator and the next call's opening, or the section's close. Named without a close or a
 * section (Mistral): the next call's opener, or nothing at all: the reply ends there (end of generation).
 */
export function jsonArgsAfter(b: ToolBuild, s: JsonCallSyntax | NamedCallSyntax, more: boolean, names: string[]): Expr {
  if (s.shape === "json") {
    const end = seq(lit("]"), s.close !== "" ? seq(WS, lit(s.close)) : EMPTY);
    return seq(WS, more ? alt(seq(lit(","), callOpening(b, s, names)), end) : end);
  }
  if (s.section?.endsReply) return more ? opt(seq(lit(s.separator + s.open), namedCall(b, s, names))) : EMPTY;
  if (s.section !== null) {
    const end = lit(s.section.close);
    return more ? alt(seq(lit(s.separator + s.open), namedCall(b, s, names)), end) : end;
  }
  return more ? opt(seq(lit(s.open), namedCall(b, s, names))) : EMPTY;
}
