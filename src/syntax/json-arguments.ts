// The arguments of the shapes that write them as one JSON object: `json` (the call is a JSON object holding the name
// and the arguments), `named` (the name in markup, then the arguments object) and harmony (gpt-oss). Each shape says
// what closes a call after the object's `}` (`after` below, as a grammar and as a pattern); the rest is here.
//
// Whitespace: JSON whitespace (the bounded WS) goes wherever JSON allows it.

import {alt, EMPTY, lit, ref, seq, type Expr} from "../grammar/gbnf.ts";
import {namePart} from "../grammar/generate.ts";
import {WS, type ToolBuild} from "../grammar/tool-build.ts";
import {scanString, scanValue, skipWs} from "./scan.ts";
import type {Boundary} from "./shape.ts";

/** A non-strict tool's arguments: any JSON object, then what closes the call. */
export function anyJsonArguments(after: Expr): Expr {
  return seq(WS, ref("object"), after);
}

/** One parameter `"P": VALUE` then `,` (some left) or the close (every required one written); the first phase
 * opens the object, and may close it at once when nothing is required. `after`: what follows the object's `}`. */
export function strictJsonArguments(b: ToolBuild, written: string[], after: Expr): Expr {
  const done = new Set(written);
  const left = b.props.filter((p) => !done.has(p.key));
  const requiredLeft = left.filter((p) => p.required).map((p) => p.key);
  const first = done.size === 0;
  // After a `,` a pair must follow; the phase before offers `,` only when one is left.
  if (!first && left.length === 0) throw new TypeError("every parameter is written: no phase follows the last one");
  const close = seq(lit("}"), after);
  const pairs = left.map((p) => {
    const delims: Expr[] = [];
    if (left.length > 1) delims.push(lit(","));
    if (requiredLeft.every((r) => r === p.key)) delims.push(close);
    return b.rule(`arg-${namePart(p.key, "key")}`, seq(lit(JSON.stringify(p.key)), WS, lit(":"), WS, b.jsonValue(p), WS, alt(...delims)));
  });
  const choices = first && requiredLeft.length === 0 ? [...pairs, close] : pairs;
  return seq(WS, first ? seq(lit("{"), WS) : EMPTY, alt(...choices));
}

/** Where a JSON argument phase ends: one pair per phase (strict) or the whole object (not), then `close` (what
 * follows the object's `}` until the call ends, anchored at its start). */
export function jsonArgumentBoundary(close: RegExp, strict: boolean, text: string): Boundary | null {
  const closed = (from: number, name?: string): Boundary | null =>
    close.test(text.slice(from)) ? (name === undefined ? {kind: "closed"} : {kind: "closed", name}) : null;
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

/** The arguments' text when it is a JSON object (as the model or client wrote it), else `{}` or the text as sent. */
export function argsText(args: string): string {
  if (args.trim() === "") return "{}";
  return args;
}

/** The arguments of a call as written into a prompt, as a JSON object (or null when they are not one). */
export function parseArgs(args: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(args);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : null;
  } catch {
    return null;
  }
}

/** The example call's arguments in docs/families.md. */
export const EXAMPLE_ARGS = '{"city": "Paris"}';
