// What the phase grammars and the boundary recogniser read from a family's CallSyntax (src/core/call-syntax.ts):
// the data checked once, and the few derived pieces both sides must agree on. Kept apart from both so that the
// grammar (tool-calls-*.ts) and the boundary (tool-boundary*.ts) cannot split a literal differently.
//
// Layout at phase boundaries. A phase ends right after the text that completes it (a tag, a name's end); a
// layout newline that the canonical form writes after that text (Qwen's "\n</parameter>\n", MiniMax's
// "</invoke>\n") is not part of that phase: it is the LEAD of the next one, and optional there. It cannot end
// the phase (a phase must be complete exactly once; "x>" and "x>\n" cannot both be complete), and the qwen-xml
// grammar has always accepted a model that leaves it out. A literal made only of newlines (GLM 4.6's name end
// "\n") is not split: that newline is what ends the name.

import type {CallSyntax, JsonCallSyntax, NamedCallSyntax, XmlCallSyntax} from "../core/call-syntax.ts";
import {EMPTY, lit, opt, type Expr} from "./gbnf.ts";

/** gpt-oss (harmony): the call header, the recipient's namespace, and what ends the header. */
export const HARMONY = {
  /** Written after an earlier message (reasoning) ended; the first message of a reply has no `<|start|>`. */
  start: "<|start|>assistant",
  opener: "<|channel|>commentary to=",
  prefix: "functions.",
  nameEnd: " <|constrain|>json<|message|>",
} as const;

/** Gemma 4: `<|tool_call>call:NAME{k:v,...}<tool_call|>`, strings between QUOTE marks. */
export const GEMMA = {opener: "<|tool_call>", prefix: "call:", close: "<tool_call|>", quote: '<|"|>'} as const;

/** Tool names as OpenAI allows them; written verbatim in every syntax, never escaped. */
export const NAME_CHARS = "a-zA-Z0-9_-";

/** A literal split at its trailing layout newlines (see the header); `tail` is "" when nothing is split off. */
export function splitTail(s: string): {core: string; tail: string} {
  const core = s.replace(/\n+$/, "");
  return core === "" ? {core: s, tail: ""} : {core, tail: s.slice(core.length)};
}

/** The texts that open a call in free text (the steering binds the open phase right after one). */
export function callOpeners(syntax: CallSyntax): string[] {
  checkSyntax(syntax);
  switch (syntax.shape) {
    case "json":
      return syntax.opener === null ? [] : [syntax.opener];
    case "named":
      return [syntax.section ? syntax.section.open : syntax.open];
    case "xml":
      return [syntax.section ? splitTail(syntax.section.open).core : syntax.open.split("\n")[0]!];
    case "custom":
      return [syntax.kind === "harmony" ? HARMONY.opener : GEMMA.opener];
  }
}

/** What the open phase writes after a freely written opener: `lead` optional (layout), then `text` exactly. */
export function afterOpener(syntax: NamedCallSyntax | XmlCallSyntax): {lead: string; text: string} {
  const opener = callOpeners(syntax)[0]!;
  const written = syntax.section ? syntax.section.open : syntax.open;
  const rest = written.slice(opener.length) + (syntax.section ? syntax.open : "");
  const lead = /^\n*/.exec(rest)![0];
  return {lead, text: rest.slice(lead.length)};
}

/** Whether calls are followed by an after-call phase: JSON lists, sections, and calls that nothing closes
 * (Mistral: the next `[TOOL_CALLS]` or the end of the reply follows). */
export function hasAfterPhase(syntax: CallSyntax): boolean {
  switch (syntax.shape) {
    case "json":
      return syntax.list;
    case "named":
      return syntax.section !== null || syntax.close === "";
    case "xml":
      return syntax.section !== null;
    case "custom":
      return false;
  }
}

/** The xml pieces after splitting (see the header). `carry`: GLM 4.7 writes nothing between the name and the
 * first parameter or the close, so the open phase ends with the first character both of those start with. */
export function xmlPieces(s: XmlCallSyntax) {
  const name = splitTail(s.nameEnd);
  const value = splitTail(s.valueEnd);
  const close = splitTail(s.close);
  const carry = s.nameEnd === "" ? s.keyOpen[0]! : "";
  const keyEnds = typeof s.keyEnd === "string" ? {string: s.keyEnd, json: s.keyEnd} : s.keyEnd;
  return {
    nameEnd: carry === "" ? name.core : carry,
    /** Optional before the first argument phase / the later ones / the after phase. */
    firstLead: carry === "" ? name.tail : "",
    lead: value.tail,
    afterLead: close.tail,
    valueEnd: value.core,
    /** The close's tags, each newline between them optional (the qwen-xml grammar always allowed that). */
    closeParts: close.core.split("\n").filter((p) => p !== ""),
    carry,
    keyEnds,
    /** The character that ends a parameter name (names may not hold it). */
    keyStop: keyEnds.string[0]!,
  };
}

const bad = (syntax: CallSyntax, why: string): never => {
  throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)}: ${why}`);
};

const checked = new WeakSet<object>();

/** The syntax data is code, not input: a malformed one is a programming error (TypeError), found once. */
export function checkSyntax(syntax: CallSyntax): void {
  if (typeof syntax !== "object" || syntax === null) throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} is not a CallSyntax`);
  if (checked.has(syntax)) return;
  switch (syntax.shape) {
    case "json":
      checkJson(syntax);
      break;
    case "named":
      if (syntax.open === "" && syntax.section === null) bad(syntax, "a call needs an opening marker");
      if (syntax.nameEnd === "" || /^[a-zA-Z0-9_:-]/.test(syntax.nameEnd)) {
        bad(syntax, "nameEnd must end the name (start with a character no name or index holds)");
      }
      break;
    case "xml":
      checkXml(syntax);
      break;
    case "custom":
      if (syntax.kind !== "harmony" && syntax.kind !== "gemma4") bad(syntax, "unknown custom kind");
      break;
    default:
      throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} has no known shape`);
  }
  checked.add(syntax);
}

function checkJson(s: JsonCallSyntax): void {
  if (s.nameKey === "" || s.argsKey === "") bad(s, "nameKey and argsKey must be set");
  if (s.opener === null && s.start === undefined) bad(s, "a syntax without an opener needs `start`");
  if (s.opener === "") bad(s, "the opener is empty (use null and `start`)");
}

function checkXml(s: XmlCallSyntax): void {
  const p = xmlPieces(s);
  if (s.open === "" || s.keyOpen === "" || p.keyEnds.string === "" || p.keyEnds.json === "") bad(s, "open, keyOpen and keyEnd must be set");
  if (p.keyEnds.string[0] !== p.keyEnds.json[0]) bad(s, "both keyEnd forms must start with the character that ends the key");
  if (/[a-zA-Z0-9_.-]/.test(p.keyStop)) bad(s, "keyEnd must start with a character no parameter name holds");
  if (p.valueEnd === "" || p.closeParts.length === 0) bad(s, "valueEnd and close must be set");
  if (p.valueEnd.startsWith("\n") && p.valueEnd.slice(1).includes("\n")) bad(s, "a value end that starts a line must be one line");
  if (!p.valueEnd.startsWith("\n") && p.valueEnd.includes("\n")) bad(s, "a value end tag may not hold a line break");
  if (new RegExp(`^[${NAME_CHARS}]`).test(p.nameEnd)) bad(s, "nameEnd must start with a character no name holds");
  if (p.carry !== "" && s.close[0] !== p.carry) bad(s, "with an empty nameEnd, keyOpen and close must start alike");
}

/** A literal that may be left out ("" is nothing at all). */
export function optLit(s: string): Expr {
  return s === "" ? EMPTY : opt(lit(s));
}

/** A literal as a regular expression. */
export function esc(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
