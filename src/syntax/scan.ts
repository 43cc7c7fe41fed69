// Small scanners for the boundary recognisers: where a JSON value (or a Gemma one) that starts at an index
// ends, or -1 while it is not finished. They assume text the phase grammar accepted, so they only have to
// find ends, not to validate.

import {GEMMA} from "./gemma4/markers.ts";

export function skipWs(text: string, i: number): number {
  while (i < text.length && (text[i] === " " || text[i] === "\n" || text[i] === "\t" || text[i] === "\r")) i++;
  return i;
}

/** The index after the JSON string starting at `i`, or -1 when it is not finished. */
export function scanString(text: string, i: number): number {
  if (text[i] !== '"') return -1;
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === "\\") j++;
    else if (text[j] === '"') return j + 1;
  }
  return -1;
}

/** The index after a scalar (number, true, false, null) starting at `i`, or -1 while nothing follows it:
 * "12" may still become "123". */
export function scanScalar(text: string, i: number): number {
  let j = i;
  while (j < text.length && /[-+.0-9a-zA-Z]/.test(text[j]!)) j++;
  return j < text.length && j > i ? j : -1;
}

/** The index after the JSON value starting at `i`, or -1 when it is not finished. */
export function scanValue(text: string, i: number): number {
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
  return scanScalar(text, i);
}

/** The index after the Gemma value starting at `i` (strings between QUOTE marks, no escapes), or -1. */
export function scanGemma(text: string, i: number): number {
  const q = GEMMA.quote;
  if (i >= text.length) return -1;
  if (text.startsWith(q, i)) {
    const end = text.indexOf(q, i + q.length);
    return end < 0 ? -1 : end + q.length;
  }
  const c = text[i];
  if (c !== "{" && c !== "[") return scanScalar(text, i);
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    if (text.startsWith(q, j)) {
      const end = text.indexOf(q, j + q.length);
      if (end < 0) return -1;
      j = end + q.length - 1;
    } else if (text[j] === "{" || text[j] === "[") depth++;
    else if (text[j] === "}" || text[j] === "]") {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}
