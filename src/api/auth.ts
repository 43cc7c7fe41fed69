// API-key check. The key may come as `Authorization: Bearer <key>` or `x-api-key: <key>` (the OpenAI and
// Anthropic SDKs send one or the other). Comparison is constant-time: both sides are hashed to a fixed
// length first, so neither the content nor the length of the key leaks through timing.

import {createHash, timingSafeEqual} from "node:crypto";
import type {IncomingHttpHeaders} from "node:http";
import {ApiError} from "../core/errors.ts";

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

export function presentedKeys(headers: IncomingHttpHeaders): string[] {
  const keys: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m) keys.push(m[1]!.trim());
  }
  const x = headers["x-api-key"];
  if (typeof x === "string" && x.length > 0) keys.push(x.trim());
  return keys;
}

export function makeKeyCheck(apiKey: string): (headers: IncomingHttpHeaders) => void {
  const expected = digest(apiKey);
  return (headers) => {
    const keys = presentedKeys(headers);
    // Every presented key is compared, so timing does not depend on which header matched.
    let ok = false;
    for (const k of keys) ok = timingSafeEqual(digest(k), expected) || ok;
    if (!ok) {
      throw new ApiError("unauthorized", keys.length === 0
        ? "this server needs an API key: send Authorization: Bearer <key> or x-api-key: <key>"
        : "the API key is not valid for this server");
    }
  };
}

/**
 * GET /health is always open so load balancers and operators can probe without a key. So are the playground
 * page (GET /) and its static assets (/playground/...): a browser cannot attach a key to a page load, and they
 * hold no server state; the page asks for the key and sends it on every API call it makes.
 */
export function isOpenRoute(method: string, url: string): boolean {
  const path = url.split("?")[0]!;
  if (method !== "GET" && method !== "HEAD") return false;
  return path === "/health" || path === "/" || path.startsWith("/playground/");
}
