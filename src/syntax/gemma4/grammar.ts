// Gemma 4's tool calls: `<|tool_call>call:NAME{city:<|"|>Paris<|"|>,days:2}<tool_call|>`. The arguments are in
// Gemma's own notation, which the reply parser (region.ts) turns into JSON: keys bare
// (letters, digits, `_ . -`), strings between `<|"|>` marks with no escapes (so a string never holds that mark),
// numbers, true, false and null as in JSON, `{k:v,...}` and `[...]`, no spaces. The schema compiler writes
// values in this notation (a Notation for the Generator), so strict Gemma arguments are enforced like JSON ones,
// with two losses: a string with a length bound cannot hold `<` (GBNF cannot count characters and exclude the
// mark at once), and a key that is not bare, or a listed value holding the mark, cannot be written (such a
// key makes the tool ineligible; such a listed value is left out).
//
// Phases: open `[WS <|tool_call>] call:NAME{` (the `{` ends the name); then one `KEY:VALUE` per phase followed
// by `,` (some left) or the close `}<tool_call|>` (every required one written), or the close alone.

import {SchemaError} from "../../grammar/errors.ts";
import {alt, classChar, cls, EMPTY, lit, opt, ref, rep, seq, star, type Expr} from "../../grammar/gbnf.ts";
import {namePart, type Notation} from "../../grammar/generate.ts";
import {rawWritable, WS, type ToolBuild} from "../../grammar/tool-build.ts";
import {GEMMA} from "./markers.ts";

const Q = GEMMA.quote;
const KEY_CHARS = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"];
const BARE_KEY = /^[A-Za-z0-9_.-]+$/;
const CLOSE = "}" + GEMMA.close;

/** A key as Gemma writes it, or a SchemaError for one it cannot write. */
function gemmaKey(k: string): string {
  if (!BARE_KEY.test(k)) {
    throw new SchemaError(`schema: the key ${JSON.stringify(k)} cannot be written in a Gemma tool call (keys are bare: letters, digits, "_", ".", "-")`, "");
  }
  return k;
}

/** A JSON value in Gemma's notation; null when it cannot be written. */
function gemmaText(v: unknown): string | null {
  if (typeof v === "string") return rawWritable(v, Q) ? Q + v + Q : null;
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) {
    const items = v.map(gemmaText);
    return items.includes(null) ? null : `[${items.join(",")}]`;
  }
  const members = Object.entries(v).map(([k, x]) => {
    const t = gemmaText(x);
    return BARE_KEY.test(k) && t !== null ? `${k}:${t}` : null;
  });
  return members.includes(null) ? null : `{${members.join(",")}}`;
}

/** A bare key other than `keys`: a trie over the keys' characters (as keys.ts does for JSON strings). */
function keyExcept(keys: string[]): Expr {
  type Trie = {terminal: boolean; children: Map<string, Trie>};
  const root: Trie = {terminal: false, children: new Map()};
  for (const key of keys.filter((k) => BARE_KEY.test(k))) {
    let node = root;
    for (const c of key) {
      let next = node.children.get(c);
      if (!next) node.children.set(c, (next = {terminal: false, children: new Map()}));
      node = next;
    }
    node.terminal = true;
  }
  const any = cls("[A-Za-z0-9_.-]");
  const walk = (node: Trie, atStart: boolean): Expr => {
    const others = KEY_CHARS.filter((c) => !node.children.has(c));
    const alts: Expr[] = [seq(cls(`[${others.map(classChar).join("")}]`), star(any))];
    for (const [c, child] of node.children) alts.push(seq(lit(c), walk(child, false)));
    if (!node.terminal && !atStart) alts.push(EMPTY);
    return alt(...alts);
  };
  return walk(root, true);
}

/** Gemma's notation for the Generator; its shared rules (any value, member, string) are made on first use. */
export function gemmaNotation(b: ToolBuild): Notation {
  let shared: {value: Expr; member: Expr; string: Expr; key: Expr} | null = null;
  const rules = () => {
    if (shared === null) {
      const string = b.rule("gemma-string", seq(lit(Q), b.tagFree(Q), lit(Q)));
      const key = b.rule("gemma-key", rep(cls("[A-Za-z0-9_.-]"), 1, null));
      const list = (x: Expr) => opt(seq(x, star(seq(lit(","), x))));
      const [value, , , member] = b.gen.ruleGroup(["gemma-value", "gemma-object", "gemma-array", "gemma-member"], ([v, o, a, m]) => [
        alt(o!, a!, string, ref("number"), ref("boolean"), ref("null")),
        seq(lit("{"), list(m!), lit("}")),
        seq(lit("["), list(v!), lit("]")),
        seq(key, lit(":"), v!),
      ]);
      shared = {value: value!, member: member!, string, key};
    }
    return shared;
  };
  return {
    ws: EMPTY,
    any: () => rules().value,
    string: () => rules().string,
    member: () => rules().member,
    boundedString: (min, max) => seq(lit(Q), rep(cls("[^<]"), min, max), lit(Q)),
    literal: (json) => gemmaText(JSON.parse(json)),
    key: gemmaKey,
    extraKey: (keys) => (keys.length === 0 ? rules().key : keyExcept(keys)),
  };
}

export function gemmaOpen(b: ToolBuild, names: string[], fromReplyStart: boolean): Expr {
  const name = b.rule("tool-name", alt(...names.map(lit)));
  return seq(fromReplyStart ? seq(WS, lit(GEMMA.opener)) : EMPTY, lit(GEMMA.prefix), name, lit("{"));
}

/** A non-strict tool: any members, then the close (the `{` is the open phase's). */
export function gemmaAnyArguments(b: ToolBuild): Expr {
  const member = b.notation.member();
  return seq(opt(seq(member, star(seq(lit(","), member)))), lit(CLOSE));
}

/** One `KEY:VALUE` then `,` or the close; the close alone once nothing required is left and (first phase) at once. */
export function gemmaStrictArguments(b: ToolBuild, written: string[]): Expr {
  for (const p of b.props) gemmaKey(p.key);
  const done = new Set(written);
  const left = b.props.filter((p) => !done.has(p.key));
  const requiredLeft = left.filter((p) => p.required).map((p) => p.key);
  const first = done.size === 0;
  if (!first && left.length === 0) throw new TypeError("every parameter is written: no phase follows the last one");
  const close = lit(CLOSE);
  const pairs = left.map((p) => {
    const delims: Expr[] = [];
    if (left.length > 1) delims.push(lit(","));
    if (requiredLeft.every((r) => r === p.key)) delims.push(close);
    return b.rule(`arg-${namePart(p.key, "key")}`, seq(lit(p.key + ":"), b.jsonValue(p), alt(...delims)));
  });
  return alt(...(first && requiredLeft.length === 0 ? [...pairs, close] : pairs));
}
