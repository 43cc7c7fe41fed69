// Step one of compiling: check a raw JSON Schema against the keyword policy and turn it into a small
// tree of what the grammar must say (the Node types below). Every schema position is checked, also
// those no value can reach (unused $defs), so whether a schema is refused never depends on generation.
// `$ref`s are recorded, not followed, which keeps this step finite for recursive schemas.

import {canonicalJson, TooDeep} from "./canonical.ts";
import {invalid, seg, SchemaError, where} from "./errors.ts";
import {mergeSchemas, type Raw} from "./merge.ts";
import {isRefused, JSON_TYPES, refusalReason, TOOL_SCHEMA_UNENFORCED, TYPE_HINTS, VALUE_KEYWORDS} from "./policy.ts";

export type Node =
  | {k: "any"}
  | {k: "string"; min: number; max: number | null}
  | {k: "number"}
  | {k: "integer"}
  | {k: "boolean"}
  | {k: "null"}
  | {k: "lits"; texts: string[]} // enum / const: canonical JSON texts
  | {k: "object"; props: Prop[]; extra: Node | null} // extra null: no keys beyond the listed ones
  | {k: "array"; items: Node; min: number; max: number | null}
  | {k: "union"; alts: Node[]}
  | {k: "ref"; target: string}; // "#" or "#/$defs/<escaped name>" or "#/definitions/<escaped name>"

export interface Prop {
  key: string;
  node: Node;
  required: boolean;
}

export interface NormContext {
  readonly root: unknown;
  /** Root $defs/definitions by target id; filled before any normalising. */
  readonly defs: ReadonlyMap<string, {raw: unknown; path: string}>;
  readonly closedObjects: boolean;
  /** Tool parameters: pattern/format accepted unenforced; the root object closed (see CompileOptions). */
  readonly toolSchema: boolean;
  readonly maxEnum: number;
  readonly maxDepth: number;
  /** Throws when the time budget is spent. */
  tick(): void;
}

const ANY: Node = {k: "any"};
const NULL: Node = {k: "null"};

const isObject = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);
const has = (o: Raw, k: string) => Object.hasOwn(o, k);

export function tooDeep(ctx: {maxDepth: number}, path: string): SchemaError {
  return new SchemaError(`schema: nesting deeper than ${ctx.maxDepth} levels`, path);
}

/** The target id of a `$ref` value found at `path` (which ends in /$ref); throws when unsupported or dangling. */
export function resolveRef(ctx: NormContext, ref: unknown, path: string): string {
  if (typeof ref !== "string") throw invalid(path, "a $ref must be a string");
  const unsupported = () =>
    new SchemaError(`${where(path)} "${ref}" is not supported: a $ref must be "#", "#/$defs/<name>" or "#/definitions/<name>"`, path);
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref); // a fragment may be percent-encoded (RFC 6901, section 6)
  } catch {
    throw unsupported();
  }
  if (fragment === "#") return "#";
  const m = /^#\/(\$defs|definitions)\/([^/]*)$/.exec(fragment);
  if (!m) throw unsupported();
  const id = `#/${m[1]}/${m[2]}`;
  if (!ctx.defs.has(id)) throw new SchemaError(`${where(path)} "${ref}" points nowhere`, path);
  return id;
}

/** The root's $defs and definitions, by target id (the name JSON-pointer-escaped, as in a $ref). */
export function collectDefs(root: unknown): Map<string, {raw: unknown; path: string}> {
  const defs = new Map<string, {raw: unknown; path: string}>();
  if (!isObject(root)) return defs;
  for (const kw of ["$defs", "definitions"]) {
    if (!has(root, kw)) continue;
    const map = root[kw];
    if (!isObject(map)) throw invalid(seg(kw), `${kw} must be an object of schemas`);
    for (const [name, raw] of Object.entries(map)) defs.set(`#/${kw}${seg(name)}`, {raw, path: seg(kw) + seg(name)});
  }
  return defs;
}

export function normalize(raw: unknown, path: string, depth: number, ctx: NormContext): Node {
  ctx.tick();
  if (depth > ctx.maxDepth) throw tooDeep(ctx, path);
  if (raw === true) return ANY;
  if (raw === false) throw invalid(path, "the schema false matches no value");
  if (!isObject(raw)) throw invalid(path, "a schema must be an object or a boolean");
  const refused = (key: string) => isRefused(key) && !(ctx.toolSchema && TOOL_SCHEMA_UNENFORCED.has(key));
  for (const key of Object.keys(raw)) if (refused(key)) throw new SchemaError(`${where(path)}: ${refusalReason(key)}`, path + seg(key), key);
  // $defs below the root cannot be referenced (refs resolve from the root) but are still checked.
  if (raw !== ctx.root) {
    for (const kw of ["$defs", "definitions"]) {
      if (!has(raw, kw)) continue;
      if (!isObject(raw[kw])) throw invalid(path + seg(kw), `${kw} must be an object of schemas`);
      for (const [name, sub] of Object.entries(raw[kw])) normalize(sub, path + seg(kw) + seg(name), depth + 1, ctx);
    }
  }
  if (has(raw, "nullable") && typeof raw.nullable !== "boolean") throw invalid(path + "/nullable", "nullable must be true or false");
  const node = core(raw, path, depth, ctx);
  // OpenAPI's `nullable: true` is read as "or null"; JSON Schema itself ignores it, but a user writing it
  // means it, and allowing null is the reading that never rejects what they meant.
  return raw.nullable === true ? union([node, NULL]) : node;
}

function union(alts: Node[]): Node {
  const flat = alts.flatMap((a) => (a.k === "union" ? a.alts : [a]));
  if (flat.some((a) => a.k === "any")) return ANY;
  return flat.length === 1 ? flat[0]! : {k: "union", alts: flat};
}

/** A copy without some keys (fromEntries, so a "__proto__" key stays an ordinary key). */
function without(raw: Raw, ...keys: string[]): Raw {
  return Object.fromEntries(Object.entries(raw).filter(([k]) => !keys.includes(k)));
}

const constrains = (raw: Raw) => Object.keys(raw).some((k) => VALUE_KEYWORDS.has(k));

function core(raw: Raw, path: string, depth: number, ctx: NormContext): Node {
  const resolver = (ref: unknown, at: string) => ctx.defs.get(resolveRef(ctx, ref, at))?.raw ?? ctx.root;
  if (has(raw, "$ref")) {
    const target = resolveRef(ctx, raw.$ref, path + "/$ref");
    const siblings = without(raw, "$ref", "nullable", "$defs", "definitions");
    if (!constrains(siblings)) return {k: "ref", target};
    // Constraining siblings of a $ref apply together with it: merged into the target's keywords.
    const merged = mergeSchemas(siblings, {$ref: raw.$ref}, resolver, path);
    if (merged === null) throw invalid(path, "no value matches both the $ref and the keywords beside it");
    return normalize(merged, path, depth + 1, ctx);
  }
  for (const kw of ["anyOf", "oneOf"]) {
    if (!has(raw, kw)) continue;
    const list = raw[kw];
    if (!Array.isArray(list) || list.length === 0) throw invalid(path + seg(kw), `${kw} must be a non-empty array of schemas`);
    const base = without(raw, kw, "nullable", "$defs", "definitions");
    // oneOf is enforced as anyOf: exclusivity would need the grammar to know that no other branch matches.
    if (!constrains(base)) return union(list.map((s, i) => normalize(s, path + seg(kw) + seg(i), depth + 1, ctx)));
    // Keywords beside the union apply to every branch: each branch is merged with them.
    const alts: Node[] = [];
    list.forEach((s, i) => {
      const merged = mergeSchemas(base, s, resolver, path + seg(kw) + seg(i));
      if (merged !== null) alts.push(normalize(merged, path + seg(kw) + seg(i), depth + 1, ctx));
    });
    if (alts.length === 0) throw invalid(path + seg(kw), `no branch of ${kw} is compatible with the keywords beside it`);
    return union(alts);
  }
  return typed(raw, path, depth, ctx);
}

function count(raw: Raw, kw: string, path: string): number | null {
  if (!has(raw, kw)) return null;
  const v = raw[kw];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw invalid(path + seg(kw), `${kw} must be a non-negative integer`);
  return v;
}

function bounds(raw: Raw, minKw: string, maxKw: string, path: string): {min: number; max: number | null} {
  const min = count(raw, minKw, path) ?? 0;
  const max = count(raw, maxKw, path);
  if (max !== null && min > max) throw invalid(path + seg(minKw), `${minKw} ${min} is greater than ${maxKw} ${max}, so no value matches`);
  return {min, max};
}

function typeList(raw: Raw, path: string): string[] | null {
  if (!has(raw, "type")) return null;
  const t = raw.type;
  const list = Array.isArray(t) ? t : [t];
  if (list.length === 0) throw invalid(path + "/type", "type must be a type name or a non-empty array of them");
  for (const name of list) {
    if (typeof name !== "string") throw invalid(path + "/type", "type must be a type name or a non-empty array of them");
    if (!JSON_TYPES.includes(name)) throw invalid(path + "/type", `${JSON.stringify(name)} is not a JSON Schema type`);
  }
  const names = [...new Set(list as string[])];
  // integer is a subset of number; listing both would make every integer parse two ways.
  return names.includes("number") ? names.filter((n) => n !== "integer") : names;
}

function jsonType(v: unknown): string[] {
  if (v === null) return ["null"];
  if (Array.isArray(v)) return ["array"];
  if (typeof v === "number") return Number.isInteger(v) ? ["integer", "number"] : ["number"];
  return [typeof v];
}

function literals(raw: Raw, types: string[] | null, path: string, depth: number, ctx: NormContext): Node {
  let values: unknown[];
  let at: string;
  if (has(raw, "enum")) {
    at = path + "/enum";
    if (!Array.isArray(raw.enum)) throw invalid(at, "enum must be an array");
    if (raw.enum.length > ctx.maxEnum) throw invalid(at, `${raw.enum.length} members (at most ${ctx.maxEnum})`);
    if (raw.enum.length === 0) throw invalid(at, "the list is empty, so no value matches");
    values = raw.enum;
  } else {
    at = path + "/const";
    values = [raw.const];
  }
  const text = (v: unknown) => {
    try {
      return canonicalJson(v, ctx.maxDepth - depth + 1);
    } catch (err) {
      if (err instanceof TooDeep) throw tooDeep(ctx, at);
      throw err;
    }
  };
  let texts = [...new Set(values.map(text))];
  if (has(raw, "enum") && has(raw, "const")) {
    const c = text(raw.const);
    if (!texts.includes(c)) throw invalid(path + "/const", "the const value is not one of enum, so no value matches");
    texts = [c];
  }
  if (types !== null) {
    texts = texts.filter((t) => jsonType(JSON.parse(t)).some((jt) => types.includes(jt)));
    if (texts.length === 0) throw invalid(at, `no listed value has the type ${types.join(" or ")}`);
  }
  return {k: "lits", texts};
}

function typed(raw: Raw, path: string, depth: number, ctx: NormContext): Node {
  const types = typeList(raw, path);
  for (const kw of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) {
    const v = raw[kw];
    if (has(raw, kw) && typeof v !== "number" && !(typeof v === "boolean" && kw.startsWith("exclusive"))) {
      throw invalid(path + seg(kw), `${kw} must be a number`);
    }
  }
  // Every keyword is checked whatever the type, so a bad subschema is reported even where unused.
  const str = bounds(raw, "minLength", "maxLength", path);
  const arr = bounds(raw, "minItems", "maxItems", path);
  const items = itemsOf(raw, path, depth, ctx);
  const obj = objectOf(raw, path, depth, ctx);
  if (has(raw, "enum") || has(raw, "const")) return literals(raw, types, path, depth, ctx);
  let names = types;
  if (names === null) {
    names = Object.keys(TYPE_HINTS).filter((t) => TYPE_HINTS[t]!.some((kw) => has(raw, kw)));
    if (names.length === 0) return ANY;
  }
  return union(names.map((t): Node => {
    switch (t) {
      case "object":
        return obj();
      case "array":
        return {k: "array", items, min: arr.min, max: arr.max};
      case "string":
        return {k: "string", min: str.min, max: str.max};
      default:
        return {k: t} as Node;
    }
  }));
}

function itemsOf(raw: Raw, path: string, depth: number, ctx: NormContext): Node {
  if (!has(raw, "items")) return ANY;
  if (Array.isArray(raw.items)) throw invalid(path + "/items", "items as an array of schemas (a tuple) is not supported; give one schema for every item");
  return normalize(raw.items, path + "/items", depth + 1, ctx);
}

/** Checks the object keywords now; builds the node only if the type includes object. */
function objectOf(raw: Raw, path: string, depth: number, ctx: NormContext): () => Node {
  let props: [string, Node][] = [];
  if (has(raw, "properties")) {
    if (!isObject(raw.properties)) throw invalid(path + "/properties", "properties must be an object of schemas");
    props = Object.entries(raw.properties).map(([k, s]) => [k, normalize(s, path + "/properties" + seg(k), depth + 1, ctx)]);
  }
  let required: string[] = [];
  if (has(raw, "required")) {
    const r = raw.required;
    if (!Array.isArray(r) || r.some((x) => typeof x !== "string")) throw invalid(path + "/required", "required must be an array of strings");
    required = [...new Set(r as string[])];
  }
  // A tool's parameters object is closed at its root even when open objects are the rule below it (the
  // spec: an absent additionalProperties at the top level of a strict tool counts as false).
  let extra: Node | null = ctx.closedObjects || (ctx.toolSchema && raw === ctx.root) ? null : ANY;
  if (has(raw, "additionalProperties")) {
    const a = raw.additionalProperties;
    extra = a === false ? null : normalize(a, path + "/additionalProperties", depth + 1, ctx);
  }
  return () => {
    const listed = new Set(props.map(([k]) => k));
    const out: Prop[] = props.map(([key, node]) => ({key, node, required: required.includes(key)}));
    // A required key that properties does not list is still required; its value is whatever extra keys may be.
    for (const key of required) {
      if (listed.has(key)) continue;
      if (extra === null) throw invalid(path + "/required", `"${key}" is required but not listed in properties, and no other key is allowed`);
      out.push({key, node: extra, required: true});
    }
    return {k: "object", props: out, extra};
  };
}
