// The xml shape's literals as the grammar, the boundary and the writer read them: split at their layout newlines
// (src/syntax/literals.ts), and checked once.

import type {XmlCallSyntax} from "../../core/call-syntax.ts";
import {badSyntax, NAME_CHARS, splitTail} from "../literals.ts";

/** The text that opens a call in free text: the section's opening, or the first line of a call's. */
export function xmlOpener(s: XmlCallSyntax): string {
  return s.section ? splitTail(s.section.open).core : s.open.split("\n")[0]!;
}

/** The pieces after splitting. `carry`: GLM 4.7 writes nothing between the name and the first parameter or the
 * close, so the open phase ends with the first character both of those start with. */
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

export function checkXml(s: XmlCallSyntax): void {
  const p = xmlPieces(s);
  const bad = (why: string) => badSyntax(s, why);
  if (s.open === "" || s.keyOpen === "" || p.keyEnds.string === "" || p.keyEnds.json === "") bad("open, keyOpen and keyEnd must be set");
  if (p.keyEnds.string[0] !== p.keyEnds.json[0]) bad("both keyEnd forms must start with the character that ends the key");
  if (/[a-zA-Z0-9_.-]/.test(p.keyStop)) bad("keyEnd must start with a character no parameter name holds");
  if (p.valueEnd === "" || p.closeParts.length === 0) bad("valueEnd and close must be set");
  if (p.valueEnd.startsWith("\n") && p.valueEnd.slice(1).includes("\n")) bad("a value end that starts a line must be one line");
  if (!p.valueEnd.startsWith("\n") && p.valueEnd.includes("\n")) bad("a value end tag may not hold a line break");
  if (new RegExp(`^[${NAME_CHARS}]`).test(p.nameEnd)) bad("nameEnd must start with a character no name holds");
  if (p.carry !== "" && s.close[0] !== p.carry) bad("with an empty nameEnd, keyOpen and close must start alike");
}
