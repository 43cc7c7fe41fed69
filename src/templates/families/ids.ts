// Tool-call ids some templates insist on. Mapped deterministically from the client's id, so a call and its
// result (tool_call_id) still pair up after the mapping.

import {createHash} from "node:crypto";

const ALPHANUMERIC = /^[A-Za-z0-9]{9}$/;
const DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** Mistral templates raise unless an id is exactly 9 alphanumerics: other ids are hashed into that form. */
export function nineAlphanumerics(id: string): string {
  if (ALPHANUMERIC.test(id)) return id;
  const bytes = createHash("sha256").update(id, "utf8").digest();
  let out = "";
  for (let i = 0; i < 9; i++) out += DIGITS[bytes[i]! % DIGITS.length];
  return out;
}
