// Where the tagged shape's phases end (see ../phases.ts and grammar.ts): the open and after phases are matched whole;
// an argument phase is one element `M<KEY>...M</KEY>`, ended when its end tag closes it at depth 0 (a non-strict
// value may nest elements), or the call's close.

import type {TaggedCallSyntax} from "../../core/call-syntax.ts";
import {afterOpener, esc, matchName, NAME, optional, whole} from "../literals.ts";
import type {Boundary, Phase} from "../shape.ts";
import {taggedPieces} from "./grammar.ts";

interface Patterns {
  openFromStart: RegExp;
  open: RegExp;
  more: RegExp;
  end: RegExp;
}

const patterns = new WeakMap<object, Patterns>();

function patternsOf(s: TaggedCallSyntax): Patterns {
  let out = patterns.get(s);
  if (out === undefined) {
    const p = taggedPieces(s);
    const rest = afterOpener({section: {open: p.sectionOpen}, open: p.open}, p.opener);
    const call = `${NAME}${esc(s.nameEnd)}`;
    out = {
      openFromStart: whole(`\\s*${esc(p.sectionOpen + p.open)}${call}`),
      open: whole(`${optional(rest.lead)}${esc(rest.text)}${call}`),
      more: whole(`${optional(p.afterLead)}${esc(p.open)}${call}`),
      end: whole(`${optional(p.afterLead)}${esc(p.sectionClose)}`),
    };
    patterns.set(s, out);
  }
  return out;
}

export function taggedBoundary(s: TaggedCallSyntax, phase: Phase, text: string): Boundary | null {
  const p = patternsOf(s);
  switch (phase.kind) {
    case "open": {
      const name = matchName(phase.fromReplyStart ? p.openFromStart : p.open, text);
      return name === null ? null : {kind: "named", name};
    }
    case "argument": {
      if (text === taggedPieces(s).close) return {kind: "closed"};
      const name = elementEnd(s.mark, text);
      return name === null ? null : {kind: "parameter", name};
    }
    case "after": {
      if (p.end.test(text)) return {kind: "end"};
      const name = matchName(p.more, text);
      return name === null ? null : {kind: "more", name};
    }
  }
}

/** The name of the element `text` is, when `text` is exactly one whole element; null while it is not yet. */
function elementEnd(mark: string, text: string): string | null {
  if (!text.startsWith(`${mark}<`)) return null;
  const stack: string[] = [];
  let i = 0;
  for (;;) {
    const at = text.indexOf(mark, i);
    if (at < 0) return null;
    const end = text.indexOf(">", at + mark.length);
    if (end < 0) return null;
    const tag = text.slice(at + mark.length + 1, end);
    i = end + 1;
    if (tag.startsWith("/")) {
      if (stack.pop() !== tag.slice(1)) return null;
      if (stack.length === 0) return i === text.length ? tag.slice(1) : null;
    } else stack.push(tag);
  }
}
