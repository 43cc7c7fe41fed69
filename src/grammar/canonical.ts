// Canonical JSON text: object keys sorted, no whitespace. Used for two things that must agree: the text
// an `enum`/`const` value is emitted as, and the cache key (equal schemas written with keys in another
// order share one compiled grammar).

import {createHash} from "node:crypto";

/** Thrown when a value nests deeper than the caller allows; the caller turns it into a SchemaError. */
export class TooDeep extends Error {}

/**
 * `keepOrderUnder`: object keys whose value is a map whose member order matters and must survive
 * canonicalisation. For schemas that is `properties` (keys are emitted in schema order, so two schemas
 * that differ only there compile to different grammars and must not share a cache key).
 */
export function canonicalJson(value: unknown, maxLevels: number, keepOrderUnder: ReadonlySet<string> = new Set()): string {
  const walk = (v: unknown, level: number, keepOrder: boolean): string => {
    if (level > maxLevels) throw new TooDeep();
    if (v === null || typeof v !== "object") {
      // Mirrors JSON.stringify for what JSON.parse cannot produce (NaN, undefined, functions).
      if (typeof v === "number") return Number.isFinite(v) ? JSON.stringify(v) : "null";
      if (typeof v === "string" || typeof v === "boolean" || v === null) return JSON.stringify(v);
      return "null";
    }
    if (Array.isArray(v)) return "[" + v.map((x) => walk(x, level + 1, false)).join(",") + "]";
    const keys = Object.keys(v).filter((k) => {
      const x = (v as Record<string, unknown>)[k];
      return x !== undefined && typeof x !== "function";
    });
    if (!keepOrder) keys.sort(compareCodeUnits);
    const members = keys.map((k) => JSON.stringify(k) + ":" + walk((v as Record<string, unknown>)[k], level + 1, keepOrderUnder.has(k)));
    return "{" + members.join(",") + "}";
  };
  return walk(value, 1, false);
}

/** Plain code-unit order (what Array.prototype.sort does by default), named so the intent is visible. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
