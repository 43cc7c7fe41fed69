// Where the pythonic shape's phases end (see ../phases.ts and grammar.ts): the open and after phases are matched
// whole; an argument phase is `[" "] KEY=VALUE` then `,` or `)`, the value scanned as JSON (the grammar writes JSON).

import type {PythonicCallSyntax} from "../../core/call-syntax.ts";
import {esc, matchName, NAME, whole} from "../literals.ts";
import {scanValue, skipWs} from "../scan.ts";
import type {Boundary, Phase} from "../shape.ts";

interface Patterns {
  openFromStart: RegExp;
  open: RegExp;
  more: RegExp;
  end: RegExp;
}

const patterns = new WeakMap<object, Patterns>();

function patternsOf(s: PythonicCallSyntax): Patterns {
  let p = patterns.get(s);
  if (p === undefined) {
    p = {
      openFromStart: whole(`\\s*${esc(s.open)}\\[${NAME}\\(`),
      open: whole(`\\[${NAME}\\(`),
      more: whole(`, ?${NAME}\\(`),
      end: whole(`\\]${esc(s.close)}`),
    };
    patterns.set(s, p);
  }
  return p;
}

const KEY = /^ ?([A-Za-z_][A-Za-z0-9_]*)=/;

export function pythonicBoundary(s: PythonicCallSyntax, phase: Phase, text: string): Boundary | null {
  const p = patternsOf(s);
  switch (phase.kind) {
    case "open": {
      const name = matchName(phase.fromReplyStart ? p.openFromStart : p.open, text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument":
      return phase.strict ? oneArgument(text) : allArguments(text);
    case "after": {
      if (p.end.test(text)) return {kind: "end"};
      const name = matchName(p.more, text);
      return name === null ? null : {kind: "more", name};
    }
  }
}

/** Strict: one `KEY=VALUE` and what follows it, or `)` alone. */
function oneArgument(text: string): Boundary | null {
  if (text === ")" || text === " )") return {kind: "closed"};
  const key = KEY.exec(text);
  if (key === null) return null;
  const end = scanValue(text, key[0].length);
  if (end < 0) return null;
  if (text[end] === ",") return {kind: "parameter", name: key[1]!};
  return text[end] === ")" ? {kind: "closed", name: key[1]!} : null;
}

/** Not strict: every `KEY=VALUE`, then `)`, in one phase. */
function allArguments(text: string): Boundary | null {
  let i = 0;
  for (;;) {
    if (text[i] === ")") return i === text.length - 1 ? {kind: "closed"} : null;
    const key = KEY.exec(text.slice(i));
    if (key === null) return null;
    const end = scanValue(text, i + key[0].length);
    if (end < 0) return null;
    i = end;
    if (text[i] === ",") i = skipWs(text, i + 1);
    else if (text[i] !== ")") return null;
  }
}
