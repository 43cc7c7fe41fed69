// Thinking-block signatures. Anthropic's signature is opaque proof that a thinking block is the model's
// own; here it carries the reasoning itself, so a client that sends a thinking block back (even with the
// text emptied, as `display: "omitted"` does) gets exactly that reasoning replayed into the prompt. The
// replayed prompt then matches what the model generated, which is what lets the prompt cache resume.
//
// Form: `svc1.` + base64url(UTF-8 reasoning) + `.` + the first 16 hex digits of sha256(reasoning). The
// hash is a check against truncation and hand edits, not a secret: anyone may write a valid signature,
// just as anyone may send reasoning_content on the chat route.

import {createHash} from "node:crypto";

const PREFIX = "svc1";
const FORM = /^svc1\.([A-Za-z0-9_-]*)\.([0-9a-f]{16})$/;
const utf8 = new TextDecoder("utf-8", {fatal: true});

function check(reasoning: string): string {
  return createHash("sha256").update(reasoning, "utf8").digest("hex").slice(0, 16);
}

export function signReasoning(reasoning: string): string {
  return `${PREFIX}.${Buffer.from(reasoning, "utf8").toString("base64url")}.${check(reasoning)}`;
}

/** Signed by this server (or claims to be): the others come from another server and cannot be read. */
export function isOwnSignature(signature: string): boolean {
  return signature.startsWith(`${PREFIX}.`);
}

/** The reasoning a signature carries; null when it is not a signature this server wrote (or was altered). */
export function reasoningFromSignature(signature: string): string | null {
  const m = FORM.exec(signature);
  if (!m) return null;
  const bytes = Buffer.from(m[1]!, "base64url");
  // Node decodes loosely; only the canonical spelling is accepted, so one reasoning has one signature.
  if (bytes.toString("base64url") !== m[1]) return null;
  let reasoning: string;
  try {
    reasoning = utf8.decode(bytes);
  } catch {
    return null;
  }
  return check(reasoning) === m[2] ? reasoning : null;
}
