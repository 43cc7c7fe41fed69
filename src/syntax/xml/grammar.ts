// Phase grammars of the xml shape (Qwen3-Coder, Seed-OSS, GLM, MiniMax M2, MiniCPM, Hunyuan, DeepSeek DSML):
// the name in markup, then one parameter per phase, `KEYOPEN NAME KEYEND VALUE VALUEEND` in any order, then
// the close. See ../phases.ts for the phases and ../literals.ts for how literals split at phase boundaries.
//
// Values: a parameter whose schema allows only strings (type "string", string enum/const, a union or $ref of
// those) is raw text, not quoted; any other is JSON from the ordinary compiler. DSML says which in the key's
// attribute (`keyEnd.string` before raw text, `keyEnd.json` before JSON). Raw text may not hold its value end
// where that would end it early (ToolBuild.rawText: no line starting with the closing tag when the value end
// starts a line, as Qwen's "\n</parameter>"; no closing tag at all otherwise), which makes the first value end
// after the header the end of the value.

import {CALL_INDEX, JSON_TYPE_NAMES, VALUE_TYPE, type XmlCallSyntax} from "../../core/call-syntax.ts";
import {invalid, seg} from "../../grammar/errors.ts";
import {alt, cls, lit, opt, ref, rep, seq, type Expr} from "../../grammar/gbnf.ts";
import {namePart} from "../../grammar/generate.ts";
import {WS, type ToolBuild} from "../../grammar/tool-build.ts";
import {afterOpener, optLit} from "../literals.ts";
import {xmlOpener, xmlPieces} from "./pieces.ts";

const toolName = (b: ToolBuild, names: string[]) => b.rule("tool-name", alt(...names.map(lit)));

/** A literal with a placeholder (CALL_INDEX: digits; VALUE_TYPE: a JSON type name) written as what it stands for. */
function filled(piece: string): Expr {
  for (const [mark, what] of [[CALL_INDEX, rep(cls("[0-9]"), 1, 4)], [VALUE_TYPE, alt(...JSON_TYPE_NAMES.map(lit))]] as const) {
    const at = piece.indexOf(mark);
    if (at >= 0) return seq(lit(piece.slice(0, at)), what, lit(piece.slice(at + mark.length)));
  }
  return lit(piece);
}

export function xmlOpen(b: ToolBuild, s: XmlCallSyntax, names: string[], fromReplyStart: boolean): Expr {
  const p = xmlPieces(s);
  if (fromReplyStart) return seq(WS, lit((s.section?.open ?? "") + s.open), toolName(b, names), filled(p.nameEnd));
  const rest = afterOpener(s, xmlOpener(s));
  return seq(optLit(rest.lead), lit(rest.text), toolName(b, names), filled(p.nameEnd));
}

/** The close of a call; the newlines between its tags are optional. `skip`: characters the open phase wrote. */
function callClose(s: XmlCallSyntax, skip: number): Expr {
  const parts = xmlPieces(s).closeParts;
  return seq(lit(parts[0]!.slice(skip)), ...parts.slice(1).map((x) => seq(opt(lit("\n")), lit(x))));
}

/** What every argument phase shares: the optional lead, and what the open phase already wrote (GLM 4.7). */
function frame(s: XmlCallSyntax, first: boolean) {
  const p = xmlPieces(s);
  const skip = first ? p.carry.length : 0;
  return {p, lead: optLit(first ? p.firstLead : p.lead), keyOpen: lit(s.keyOpen.slice(skip)), close: callClose(s, skip)};
}

/** A non-strict tool: any parameter name, raw text (or, where the syntax marks it, any JSON value). */
export function xmlAnyArguments(b: ToolBuild, s: XmlCallSyntax, first: boolean): Expr {
  const {p, lead, keyOpen, close} = frame(s, first);
  const name = b.rule("parameter-name", rep(cls("[a-zA-Z0-9_.-]"), 1, null));
  const raw = seq(lit(p.keyEnds.string), b.rawText(p.valueEnd));
  const value = p.keyEnds.string === p.keyEnds.json ? raw : alt(raw, seq(filled(p.keyEnds.json), ref("value")));
  return seq(lead, alt(seq(keyOpen, name, value, lit(p.valueEnd)), close));
}

/** The next parameter not written, or the close once every required one is. */
export function xmlStrictArguments(b: ToolBuild, s: XmlCallSyntax, written: string[]): Expr {
  const {p, lead, keyOpen, close} = frame(s, written.length === 0);
  for (const prop of b.props) checkXmlName(prop.key, p.keyStop);
  const done = new Set(written);
  const left = b.props.filter((x) => !done.has(x.key));
  const requiredLeft = left.filter((x) => x.required);
  const params = left.map((x) => {
    const raw = b.rawValue(x, p.valueEnd);
    const value = raw !== null ? seq(lit(p.keyEnds.string), raw) : seq(filled(p.keyEnds.json), b.jsonValue(x));
    return b.rule(`arg-${namePart(x.key, "key")}`, seq(keyOpen, lit(x.key), value, lit(p.valueEnd)));
  });
  return seq(lead, alt(...params, ...(requiredLeft.length === 0 ? [close] : [])));
}

/** Sections only: the separator and another call's opening ("more"), or the section's close ("end"). */
export function xmlAfter(b: ToolBuild, s: XmlCallSyntax, more: boolean, names: string[]): Expr {
  const p = xmlPieces(s);
  const end = lit(s.section!.close);
  const next = seq(lit(s.separator + s.open), toolName(b, names), filled(p.nameEnd));
  return seq(optLit(p.afterLead), more ? alt(next, end) : end);
}

/** Parameter names are written bare: one holding the character that ends the name, or a line break, would
 * make the header ambiguous. */
function checkXmlName(key: string, stop: string): void {
  if (key === "" || /[\r\n]/.test(key) || key.includes(stop)) {
    throw invalid(seg("properties") + seg(key),
      `the parameter name ${JSON.stringify(key)} cannot be written in this tool-call syntax (empty, or it holds ${JSON.stringify(stop)} or a line break)`);
  }
}
