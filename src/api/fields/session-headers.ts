// The named-session headers (SVC_FORK=1): `X-Svc-Keep: <name>` keeps the reply's end state under a name,
// `X-Svc-From: <name>` starts from a kept one. Names never reach the file system (the registry maps them to
// random ids), but they are echoed in logs, listings and the DELETE /svc/handles/{name} path, so the set is
// kept to characters that need no quoting or URL escaping; the first one is a letter or digit so "." and ".."
// (which clients collapse in URL paths) and option-looking "-x" cannot be names.

import {invalidField} from "../../core/errors.ts";

export const SESSION_NAME_MAX = 128;
export const SESSION_NAME_RULE =
  `must be 1 to ${SESSION_NAME_MAX} characters from A-Z a-z 0-9 . _ - : @, starting with a letter or digit (no spaces)`;
/** The rule as a pattern (also /openapi.json's schema for the headers and the DELETE path). */
export const SESSION_NAME_PATTERN = `^[A-Za-z0-9][A-Za-z0-9._:@-]{0,${SESSION_NAME_MAX - 1}}$`;
const NAME = new RegExp(SESSION_NAME_PATTERN);

/** What the response's `X-Svc-From` header says about the name the request asked to start from. */
export const FROM_HEADER_VALUES = ["used", "unmatched", "unknown"] as const;
export type FromHeaderValue = (typeof FROM_HEADER_VALUES)[number];

export const KEEP_HEADER = "X-Svc-Keep";
export const FROM_HEADER = "X-Svc-From";

/** The name itself, or a 400 naming `param` and the rule. */
export function checkSessionName(value: string, param: string): string {
  if (NAME.test(value)) return value;
  // Node joins a repeated X- header with ", "; say so rather than only "no spaces".
  if (value.includes(",")) throw invalidField(param, `must be sent once with one name; ${SESSION_NAME_RULE}`);
  throw invalidField(param, SESSION_NAME_RULE);
}

function readOne(headers: Record<string, string | string[] | undefined>, header: string): string | null {
  const key = header.toLowerCase();
  // Node lower-cases header names; a hand-built object may not, so look case-insensitively.
  const found = key in headers ? headers[key] : Object.entries(headers).find(([k]) => k.toLowerCase() === key)?.[1];
  if (found === undefined) return null;
  if (Array.isArray(found)) {
    if (found.length !== 1) throw invalidField(header, `must be sent once with one name; ${SESSION_NAME_RULE}`);
    return checkSessionName(found[0]!, header);
  }
  return checkSessionName(found, header);
}

/** The session names a generation request asks for; throws a 400 for a malformed one. */
export function readSessionHeaders(headers: Record<string, string | string[] | undefined>): {keep: string | null; from: string | null} {
  return {keep: readOne(headers, KEEP_HEADER), from: readOne(headers, FROM_HEADER)};
}
