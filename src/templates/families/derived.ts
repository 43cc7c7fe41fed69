// A template no family file knows, whose call syntax was read from its own renders (templates/derive-syntax.ts).
// It is served like a family file of that shape: its markers are parsed, strict tools are enforced in them, and
// past calls are written in them.

import type {CallSyntax} from "../../core/call-syntax.ts";
import {THINK, type ModelFamily} from "./family.ts";

/** The marker texts of a syntax: kept visible when they are special tokens, so the reply parser sees them. */
function markerTexts(syntax: CallSyntax): string[] {
  const texts: string[] = [];
  const add = (s: string | undefined | null) => {
    const t = s?.trim();
    if (t) texts.push(t);
  };
  switch (syntax.shape) {
    case "json":
      add(syntax.opener);
      add(syntax.close);
      break;
    case "named":
      add(syntax.section?.open);
      add(syntax.section?.close);
      for (const s of [syntax.open, syntax.nameEnd, syntax.argsEnd, syntax.close, syntax.separator]) add(s);
      break;
    case "xml":
      add(syntax.section?.open);
      add(syntax.section?.close);
      for (const s of [syntax.open, syntax.nameEnd, syntax.keyOpen, syntax.valueEnd, syntax.close, syntax.separator]) add(s);
      if (typeof syntax.keyEnd === "string") add(syntax.keyEnd);
      break;
    case "custom":
      break;
  }
  return [...new Set(texts)];
}

export function derivedFamily(calls: CallSyntax, parallelCalls: boolean): ModelFamily {
  return {
    id: "derived",
    name: "Derived from the template's own renders (no family file matches it)",
    matches: () => false,
    // As for the generic family: read only when the template has a thinking switch or the markers (reply-plan.ts).
    reasoning: THINK,
    calls,
    parallelCalls,
    preserved: markerTexts(calls),
    input: {reasoning: "reasoning_content"},
  };
}
