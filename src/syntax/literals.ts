// Pieces every markup shape builds its grammar, boundary and parser from, so that the three cannot split a literal
// differently.
//
// Layout at phase boundaries. A phase ends right after the text that completes it (a tag, a name's end); a
// layout newline that the canonical form writes after that text (Qwen's "\n</parameter>\n", MiniMax's
// "</invoke>\n") is not part of that phase: it is the LEAD of the next one, and optional there. It cannot end
// the phase (a phase must be complete exactly once; "x>" and "x>\n" cannot both be complete), and the qwen-xml
// grammar has always accepted a model that leaves it out. A literal made only of newlines (GLM 4.6's name end
// "\n") is not split: that newline is what ends the name.

import {EMPTY, lit, opt, type Expr} from "../grammar/gbnf.ts";

/** Tool names as OpenAI allows them; written verbatim in every syntax, never escaped. */
export const NAME_CHARS = "a-zA-Z0-9_-";

/** A tool name, captured, in a boundary pattern. */
export const NAME = `([${NAME_CHARS}]{1,64})`;

/** A literal split at its trailing layout newlines (see the header); `tail` is "" when nothing is split off. */
export function splitTail(s: string): {core: string; tail: string} {
  const core = s.replace(/\n+$/, "");
  return core === "" ? {core: s, tail: ""} : {core, tail: s.slice(core.length)};
}

/** A markup syntax's call opening: an optional section around the calls, and what opens one call. */
export interface Opening {
  section: {open: string} | null;
  open: string;
}

/** What the open phase writes after a freely written `opener`: `lead` optional (layout), then `text` exactly. */
export function afterOpener(s: Opening, opener: string): {lead: string; text: string} {
  const written = s.section ? s.section.open : s.open;
  const rest = written.slice(opener.length) + (s.section ? s.open : "");
  const lead = /^\n*/.exec(rest)![0];
  return {lead, text: rest.slice(lead.length)};
}

/** A literal that may be left out ("" is nothing at all). */
export function optLit(s: string): Expr {
  return s === "" ? EMPTY : opt(lit(s));
}

/** A literal as a regular expression. */
export function esc(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A regular expression that matches the whole text. */
export const whole = (re: string): RegExp => new RegExp(`^${re}$`);

/** A literal that may be left out, in a regular expression. */
export const optional = (s: string): string => (s === "" ? "" : `(?:${esc(s)})?`);

/** A malformed syntax: a programming error, found once. */
export function badSyntax(syntax: unknown, why: string): never {
  throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)}: ${why}`);
}

/** The tool name a whole-phase pattern found (JSON: the name member's string, decoded). */
export function matchName(re: RegExp, text: string): string | null {
  const m = re.exec(text);
  if (m === null) return null;
  return m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : m[1]!;
}

/** The marker texts among `texts`, trimmed, without empties or repeats. */
export function markerTexts(texts: readonly (string | null | undefined)[]): string[] {
  return [...new Set(texts.map((t) => t?.trim() ?? "").filter((t) => t !== ""))];
}
