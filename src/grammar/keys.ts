// The names an object's extra keys may take: any JSON string except the listed keys. Extra keys come
// after the listed ones, so a listed name written again would be a duplicate key (or a listed key out of
// its schema order); excluding them keeps the object exactly as the schema describes it.
//
// Exclusion is exact because extra names are spelled canonically (as JSON.stringify writes them: `\"`,
// `\\`, `\b` `\f` `\n` `\r` `\t`, `\u00xx` for other controls, everything else literal). Every string has
// exactly one such spelling, so "not spelled like a listed key" is "not equal to a listed key". What is
// lost: an extra name cannot use optional escapes such as `\/` or `\u00e9`, and cannot hold a lone
// surrogate; the set of names it can express is otherwise every string.

import {alt, cls, classChar, EMPTY, lit, ref, rep, seq, star, type Expr} from "./gbnf.ts";

interface Trie {
  terminal: boolean;
  children: Map<string, Trie>;
}

/** The units of a key's canonical spelling: one code point, or one whole escape (`\n`, `\u0001`). */
export function spelledUnits(key: string): string[] {
  const text = JSON.stringify(key).slice(1, -1);
  const out: string[] = [];
  for (let i = 0; i < text.length;) {
    if (text[i] === "\\") {
      const n = text[i + 1] === "u" ? 6 : 2;
      out.push(text.slice(i, i + n));
      i += n;
    } else {
      const ch = String.fromCodePoint(text.codePointAt(i)!);
      out.push(ch);
      i += ch.length;
    }
  }
  return out;
}

const SHORT = ['"', "\\", "b", "f", "n", "r", "t"];
const LOW = "01234567bef".split(""); // \u0000-\u000f without the five that have short forms
const HIGH = "0123456789abcdef".split("");

/** One canonical escape other than those in `excluded` (spelled units starting with a backslash). */
function escapeExcept(excluded: ReadonlySet<string>): Expr {
  const short = SHORT.filter((c) => !excluded.has("\\" + c));
  const low = LOW.filter((d) => !excluded.has("\\u000" + d));
  const high = HIGH.filter((d) => !excluded.has("\\u001" + d));
  const parts: Expr[] = [];
  if (short.length > 0) parts.push(cls(`[${short.map(classChar).join("")}]`));
  if (low.length > 0) parts.push(seq(lit("u000"), cls(`[${low.join("")}]`)));
  if (high.length > 0) parts.push(seq(lit("u001"), cls(`[${high.join("")}]`)));
  return seq(lit("\\"), alt(...parts));
}

/** One canonical unit that is none of `units`. */
function unitExcept(units: readonly string[]): Expr {
  const chars = units.filter((u) => !u.startsWith("\\"));
  const escapes = new Set(units.filter((u) => u.startsWith("\\")));
  const plain = cls(`[^"\\\\\\x00-\\x1F${chars.map(classChar).join("")}]`);
  return alt(plain, escapes.size === 0 ? ref("key-esc") : escapeExcept(escapes));
}

/** The spelled contents that leave the trie at this node: end here (unless a key ends here), go on
 * with a unit no key continues with (then anything), or follow a key's next unit. */
function notKey(node: Trie): Expr {
  const alts: Expr[] = [];
  const next = [...node.children.keys()];
  alts.push(next.length === 0 ? rep(ref("key-char"), 1, null) : seq(unitExcept(next), star(ref("key-char"))));
  for (const [unit, child] of node.children) alts.push(seq(lit(unit), notKey(child)));
  // An empty alternative rather than `( ... )?`: a `?` on a large group counts against llama.cpp's
  // rules-times-repetitions limit, an alternative does not.
  if (!node.terminal) alts.push(EMPTY);
  return alt(...alts);
}

/** A JSON string (quotes included) whose value is none of `keys`. */
export function stringExcept(keys: readonly string[]): Expr {
  const root: Trie = {terminal: false, children: new Map()};
  for (const key of keys) {
    let node = root;
    for (const unit of spelledUnits(key)) {
      let child = node.children.get(unit);
      if (!child) node.children.set(unit, (child = {terminal: false, children: new Map()}));
      node = child;
    }
    node.terminal = true;
  }
  return seq(lit('"'), notKey(root), lit('"'));
}
