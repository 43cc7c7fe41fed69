// Phase grammars of the pythonic shape (LFM2): `OPEN [NAME(KEY=VALUE, ...), ...] CLOSE`. Values are written as JSON,
// which is also a Python literal where it matters here (strings in double quotes, numbers, lists, dicts with string
// keys) and which the model's own format accepts for true, false and null (llama.cpp reads LFM2's calls the same
// way). Keys are bare Python identifiers: a parameter whose name is not one cannot be written, and makes a strict tool
// ineligible.
//
// Phases (see ../phases.ts): open `[WS OPEN] "[" NAME "("` (the `(` ends the name); then one `KEY=VALUE` per phase
// followed by `,` (some left) or `)` (every required one written), or `)` alone; a later phase may start with the
// space the canonical form writes after a comma. After a call: `"," [" "] NAME "("` or `"]" CLOSE`.

import type {PythonicCallSyntax} from "../../core/call-syntax.ts";
import {SchemaError} from "../../grammar/errors.ts";
import {alt, cls, EMPTY, lit, opt, ref, seq, star, type Expr} from "../../grammar/gbnf.ts";
import {namePart} from "../../grammar/generate.ts";
import {WS, type ToolBuild} from "../../grammar/tool-build.ts";

/** A Python identifier (the keyword arguments' names). */
export const PYTHON_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

const toolName = (b: ToolBuild, names: string[]) => b.rule("tool-name", alt(...names.map(lit)));

/** The space the canonical form writes after a comma; a model may leave it out. */
const SPACE = opt(lit(" "));

function pythonKey(key: string): string {
  if (!PYTHON_KEY.test(key)) {
    throw new SchemaError(`schema: the parameter name ${JSON.stringify(key)} cannot be written in a Python-style tool call ` +
      "(keyword arguments are identifiers: a letter or _, then letters, digits or _)", "");
  }
  return key;
}

export function pythonicOpen(b: ToolBuild, s: PythonicCallSyntax, names: string[], fromReplyStart: boolean): Expr {
  return seq(fromReplyStart ? seq(WS, lit(s.open)) : EMPTY, lit("["), toolName(b, names), lit("("));
}

/** A non-strict tool: any keyword arguments with any JSON values, then `)`. */
export function pythonicAnyArguments(b: ToolBuild): Expr {
  const key = b.rule("python-key", seq(cls("[A-Za-z_]"), star(cls("[A-Za-z0-9_]"))));
  const pair = seq(key, lit("="), ref("value"));
  return seq(opt(seq(pair, star(seq(lit(","), SPACE, pair)))), lit(")"));
}

/** One `KEY=VALUE` then `,` or `)`; `)` alone once nothing required is left and (first phase) at once. */
export function pythonicStrictArguments(b: ToolBuild, written: string[]): Expr {
  for (const p of b.props) pythonKey(p.key);
  const done = new Set(written);
  const left = b.props.filter((p) => !done.has(p.key));
  const requiredLeft = left.filter((p) => p.required).map((p) => p.key);
  const first = done.size === 0;
  if (!first && left.length === 0) throw new TypeError("every parameter is written: no phase follows the last one");
  const close = lit(")");
  const pairs = left.map((p) => {
    const delims: Expr[] = [];
    if (left.length > 1) delims.push(lit(","));
    if (requiredLeft.every((r) => r === p.key)) delims.push(close);
    return b.rule(`arg-${namePart(p.key, "key")}`, seq(lit(`${p.key}=`), b.jsonValue(p), alt(...delims)));
  });
  const choices = first && requiredLeft.length === 0 ? [...pairs, close] : pairs;
  return seq(first ? EMPTY : SPACE, alt(...choices));
}

/** After a call: another call in the list ("more"), or the list's end and the close ("end"). */
export function pythonicAfter(b: ToolBuild, s: PythonicCallSyntax, more: boolean, names: string[]): Expr {
  const end = seq(lit("]"), lit(s.close));
  return more ? alt(seq(lit(","), SPACE, toolName(b, names), lit("(")), end) : end;
}
