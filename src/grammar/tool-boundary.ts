// Where a tool-call phase ends, read from the text. The pipeline binds one phase grammar at a time and
// calls `phaseBoundary` with everything generated since; it answers null until the phase is complete,
// then what the phase wrote. Every phase grammar ends exactly at its boundary (nothing may follow a
// complete phase), so the text is valid for its phase and ends at the boundary once it is reached: this
// only has to tell a complete phase from a prefix of one, and pull the names out. For the JSON syntaxes
// that takes a small scanner (a `,` or `}` inside a value is not a boundary); for qwen-xml the value
// language guarantees that the first "\n</parameter>" after the header is the end of the value.

export type ToolSyntax = "qwen-xml" | "hermes" | "generic";

/** Which phase a grammar is for; each PhaseGrammar carries its own, to hand back to phaseBoundary. */
export type Phase =
  | {kind: "open"} // openGrammar / nextGenericCall: up to and including the tool name
  | {kind: "argument"; strict: boolean} // argumentGrammar: one parameter, or the close of the call
  | {kind: "after"}; // afterCallGrammar (generic): the next call's opening, or the end of the reply

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
  | {kind: "closed"; name?: string} // the call ended; name: the parameter written in the same phase, if any (JSON syntaxes)
  | {kind: "more"; name: string} // generic: another call opened, naming its tool
  | {kind: "end"}; // generic: the reply's `]}` was written

const XML_CLOSE_VALUE = "\n</parameter>";
const PARAMETER_OPEN = "<parameter=";
const FUNCTION_OPEN = "<function=";

export function phaseBoundary(syntax: ToolSyntax, phase: Phase, text: string): Boundary | null {
  switch (phase.kind) {
    case "open":
      return syntax === "qwen-xml" ? xmlNamed(text) : jsonNamed(text);
    case "argument":
      return syntax === "qwen-xml" ? xmlArgument(text) : jsonArgument(syntax, phase.strict, text);
    case "after":
      return afterCall(text);
  }
}

/** `<function=NAME>`: complete at the `>` (tool names never contain one). */
function xmlNamed(text: string): Boundary | null {
  const at = text.indexOf(FUNCTION_OPEN);
  if (at < 0) return null;
  const gt = text.indexOf(">", at);
  return gt < 0 ? null : {kind: "named", name: text.slice(at + FUNCTION_OPEN.length, gt)};
}

/** `"name": "NAME", "arguments":` — complete at that colon. The name is decoded as a JSON string. */
const NAMED = /"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:/;

function jsonName(text: string): string | null {
  const m = NAMED.exec(text);
  return m === null ? null : (JSON.parse(m[1]!) as string);
}

function jsonNamed(text: string): Boundary | null {
  const name = jsonName(text);
  return name === null ? null : {kind: "named", name};
}

/** `,` and the next call's opening up to its `"arguments":`, or `] }` (the reply ends). */
function afterCall(text: string): Boundary | null {
  const i = skipWs(text, 0);
  if (text[i] === "]") return /^\s*\]\s*\}/.test(text) ? {kind: "end"} : null;
  if (text[i] !== ",") return null;
  const name = jsonName(text);
  return name === null ? null : {kind: "more", name};
}

function xmlArgument(text: string): Boundary | null {
  const t = text.startsWith("\n") ? text.slice(1) : text;
  if (t.startsWith("</function>")) return t.endsWith("</tool_call>") ? {kind: "closed"} : null;
  if (!t.startsWith(PARAMETER_OPEN)) return null;
  const gt = t.indexOf(">");
  if (gt < 0) return null;
  // The value starts after the header's newline; it never starts with the closer, so searching from
  // that newline finds the end of the value (an empty value gives "\n\n</parameter>").
  if (t.indexOf(XML_CLOSE_VALUE, gt + 1) < 0) return null;
  return {kind: "parameter", name: t.slice(PARAMETER_OPEN.length, gt)};
}

/** What follows the `}` of the arguments until the phase ends: the envelope's close. */
const ENVELOPE_CLOSE: Record<"hermes" | "generic", RegExp> = {
  hermes: /^\s*\}\s*<\/tool_call>/,
  generic: /^\s*\}/,
};

function jsonArgument(syntax: "hermes" | "generic", strict: boolean, text: string): Boundary | null {
  const closed = (from: number, name?: string): Boundary | null =>
    ENVELOPE_CLOSE[syntax].test(text.slice(from)) ? (name === undefined ? {kind: "closed"} : {kind: "closed", name}) : null;
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

function skipWs(text: string, i: number): number {
  while (i < text.length && (text[i] === " " || text[i] === "\n" || text[i] === "\t" || text[i] === "\r")) i++;
  return i;
}

/** The index after the JSON string starting at `i`, or -1 when it is not finished. */
function scanString(text: string, i: number): number {
  if (text[i] !== '"') return -1;
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === "\\") j++;
    else if (text[j] === '"') return j + 1;
  }
  return -1;
}

/** The index after the JSON value starting at `i`, or -1 when it is not finished. A scalar is only
 * finished once something follows it: "12" may still become "123". */
function scanValue(text: string, i: number): number {
  if (i >= text.length) return -1;
  const c = text[i];
  if (c === '"') return scanString(text, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') {
        j = scanString(text, j);
        if (j < 0) return -1;
        j--; // the loop's j++ lands after the string
      } else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !",}] \t\n\r".includes(text[j]!)) j++;
  return j < text.length ? j : -1;
}
