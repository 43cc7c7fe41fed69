// Where Gemma 4's phases end (see phases.ts for the protocol): the open phase `[WS <|tool_call>] call:NAME{` matched
// whole; then `KEY:VALUE` followed by `,` or `}<tool_call|>`, the object's `{` written by the open phase.

import {esc, matchName, NAME, whole} from "../literals.ts";
import {scanGemma} from "../scan.ts";
import type {Boundary, Phase} from "../shape.ts";
import {GEMMA} from "./markers.ts";

const OPEN_FROM_START = whole(`\\s*${esc(GEMMA.opener + GEMMA.prefix)}${NAME}\\{`);
const OPEN = whole(`${esc(GEMMA.prefix)}${NAME}\\{`);
const GEMMA_KEY = /^[A-Za-z0-9_.-]+/;

export function gemmaBoundary(phase: Phase, text: string): Boundary | null {
  switch (phase.kind) {
    case "open": {
      const name = matchName(phase.fromReplyStart ? OPEN_FROM_START : OPEN, text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument":
      return gemmaArgument(phase.strict, text);
    case "after":
      throw new TypeError("Gemma 4 calls have no after-call phase");
  }
}

function gemmaArgument(strict: boolean, text: string): Boundary | null {
  const closedAt = (i: number, name?: string): Boundary | null =>
    text.startsWith(GEMMA.close, i) ? (name === undefined ? {kind: "closed"} : {kind: "closed", name}) : null;
  if (!strict) {
    // The whole object in one phase; its `{` is the open phase's.
    const end = scanGemma("{" + text, 0);
    return end < 0 ? null : closedAt(end - 1);
  }
  if (text.startsWith("}")) return closedAt(1);
  const key = GEMMA_KEY.exec(text);
  if (key === null || text[key[0].length] !== ":") return null;
  const end = scanGemma(text, key[0].length + 1);
  if (end < 0) return null;
  if (text[end] === ",") return {kind: "parameter", name: key[0]};
  return text[end] === "}" ? closedAt(end + 1, key[0]) : null;
}
