// Keywords that apply together: the siblings of an `anyOf`/`oneOf` apply to every branch, and the
// siblings of a `$ref` apply together with its target. A grammar cannot intersect two languages, so the
// two keyword sets are merged into one schema instead. The merge is exact for the common shapes (shared
// properties beside a union of variants, `required` combinations, `type` narrowing, tighter bounds) and
// an approximation otherwise: for other keywords the branch's value wins, and a property a branch adds
// is allowed even where the base says `additionalProperties: false` (the evident intent of such schemas).

import {invalid} from "./errors.ts";

export type Raw = Record<string, unknown>;

const isObject = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

/** The target schema of a $ref value; `at` is where the $ref is, for messages. */
export type Resolver = (ref: unknown, at: string) => unknown;

/** `base` merged with `branch`; null when they cannot both hold (e.g. disjoint types). A `$ref` at the
 * top of the branch is followed first, so its target's keywords take part in the merge. */
export function mergeSchemas(base: Raw, branch: unknown, resolve: Resolver, path: string): Raw | null {
  let b = branch;
  for (let hops = 0; isObject(b) && Object.hasOwn(b, "$ref"); hops++) {
    if (hops > 32) throw invalid(path, "the $ref chain never reaches a schema (a cycle of $refs)");
    const {$ref, ...rest} = b;
    const target = resolve($ref, path + "/$ref");
    b = sub(rest, target, path);
  }
  if (b === true) return {...base};
  if (b === false) return null;
  if (!isObject(b)) throw invalid(path, "a schema must be an object or a boolean");
  return shallow(base, b, path);
}

/** Two schemas at one position (a property listed on both sides, or a $ref's siblings and target). */
function sub(x: unknown, y: unknown, path: string): unknown {
  if (x === true) return y;
  if (y === true) return x;
  if (x === false || y === false) return false;
  if (!isObject(x) || !isObject(y)) return isObject(x) ? y : x; // malformed: normalising reports it
  return shallow(x, y, path) ?? false;
}

const asList = (t: unknown): unknown[] | null => (typeof t === "string" ? [t] : Array.isArray(t) ? t : null);

/** Types both sides allow; integer is what number and integer have in common. */
function intersectTypes(a: unknown, b: unknown): unknown[] | null {
  const la = asList(a);
  const lb = asList(b);
  if (la === null || lb === null) return null;
  const out = new Set<unknown>();
  for (const x of la) {
    for (const y of lb) {
      if (x === y) out.add(x);
      else if ((x === "number" && y === "integer") || (x === "integer" && y === "number")) out.add("integer");
    }
  }
  return [...out];
}

const TIGHTER: Readonly<Record<string, (a: number, b: number) => number>> = {
  minLength: Math.max, minItems: Math.max, maxLength: Math.min, maxItems: Math.min,
};

function shallow(a: Raw, b: Raw, path: string): Raw | null {
  // Built in a Map and turned into an object with fromEntries: a key "__proto__" (JSON.parse makes it an
  // ordinary key) must stay a key, not become the object's prototype as an assignment would make it.
  const out = new Map(Object.entries(a));
  for (const [k, v] of Object.entries(b)) {
    if (k === "$defs" || k === "definitions") continue; // refs resolve from the root; these add nothing here
    if (!out.has(k)) {
      out.set(k, v);
      continue;
    }
    const mine = out.get(k);
    if (k === "type") {
      const both = intersectTypes(mine, v);
      if (both === null) out.set(k, v); // malformed: normalising reports it
      else if (both.length === 0) return null;
      else out.set(k, both.length === 1 ? both[0] : both);
    } else if (k === "properties" && isObject(mine) && isObject(v)) {
      const props = new Map(Object.entries(mine));
      for (const [name, s] of Object.entries(v)) props.set(name, props.has(name) ? sub(props.get(name), s, path) : s);
      out.set(k, Object.fromEntries(props));
    } else if (k === "required" && Array.isArray(mine) && Array.isArray(v)) {
      out.set(k, [...new Set([...mine, ...v])]);
    } else if (Object.hasOwn(TIGHTER, k) && typeof mine === "number" && typeof v === "number") {
      out.set(k, TIGHTER[k]!(mine, v));
    } else if (k === "anyOf" || k === "oneOf") {
      // Both sides carry a union: keep both, one under each name (both are enforced as anyOf, and two
      // unions on one schema are distributed one after the other).
      const other = k === "anyOf" ? "oneOf" : "anyOf";
      if (out.has(other)) throw invalid(path, `three or more anyOf/oneOf lists applying to one value are not supported`);
      out.set(other, v);
    } else {
      out.set(k, v);
    }
  }
  return Object.fromEntries(out);
}
