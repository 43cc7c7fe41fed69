// A template no family file knows, whose call syntax was read from its own renders (templates/derive-syntax.ts).
// It is served like a family file of that shape: its markers are parsed, strict tools are enforced in them, and
// past calls are written in them.

import type {CallSyntax} from "../../core/call-syntax.ts";
import {shapeOf} from "../../syntax/index.ts";
import {THINK, type ModelFamily} from "./family.ts";

export function derivedFamily(calls: CallSyntax, parallelCalls: boolean): ModelFamily {
  return {
    id: "derived",
    name: "Derived from the template's own renders (no family file matches it)",
    matches: () => false,
    // As for the generic family: read only when the template has a thinking switch or the markers (reply-plan.ts).
    reasoning: THINK,
    calls,
    parallelCalls,
    // The marker texts: kept visible when they are special tokens, so the reply parser sees them.
    preserved: shapeOf(calls).markers(calls),
    input: {reasoning: "reasoning_content"},
  };
}
