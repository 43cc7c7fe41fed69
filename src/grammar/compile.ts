// JSON Schema → GBNF for llama.cpp's grammar sampler: the entry points, the options and the budgets.
// A schema arrives in a request body, so compiling is bounded in time, rules, bytes, enum size and
// nesting; exceeding a bound is the user's 400, never a stuck or exhausted server.

import {finishGrammar} from "./analyze.ts";
import {canonicalJson, sha256Hex, TooDeep} from "./canonical.ts";
import {invalid, SchemaError} from "./errors.ts";
import {Generator} from "./generate.ts";
import {collectDefs, normalize, tooDeep, type NormContext, type Node} from "./normalize.ts";

export interface CompileOptions {
  /** Absent additionalProperties means false (strict tools) instead of JSON Schema's true. Default false. */
  closedObjects?: boolean;
  /** A tool's parameter schema: `pattern` and `format` are accepted and not enforced (instead of
   * refused), and the root object's absent additionalProperties means false. Default false. */
  toolSchema?: boolean;
  /** Budgets: exceeding one throws SchemaError. Defaults: maxMs 250, maxRules 4000, maxGrammarBytes 262144, maxEnum 1000, maxDepth 48. */
  maxMs?: number;
  maxRules?: number;
  maxGrammarBytes?: number;
  maxEnum?: number;
  maxDepth?: number;
}

export interface CompiledSchema {
  gbnf: string;
  rootRule: "root";
  /** sha256 hex of the canonical (key-sorted) JSON of schema + options */
  key: string;
}

type Settings = Required<CompileOptions>;

const DEFAULTS: Settings = {closedObjects: false, toolSchema: false, maxMs: 250, maxRules: 4000, maxGrammarBytes: 262144, maxEnum: 1000, maxDepth: 48};

/** Options with every default filled in, so `{}` and `{closedObjects: false}` share a cache key. */
export function settings(opts: CompileOptions = {}): Settings {
  const out = {...DEFAULTS};
  for (const k of Object.keys(DEFAULTS) as (keyof Settings)[]) {
    const v = opts[k];
    if (v === undefined) continue;
    if (k === "closedObjects" || k === "toolSchema" ? typeof v !== "boolean" : typeof v !== "number" || Number.isNaN(v) || v < 0) {
      throw new TypeError(`compile option ${k}: ${JSON.stringify(v)} is not valid`);
    }
    (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** Keys whose member order survives canonicalisation: `properties` order is the emitted key order. */
const ORDERED = new Set(["properties"]);

/** The cache key of a schema and its options. Hashing walks the whole schema before the compiler has
 * checked its depth, so JSON nested far deeper than any schema allowed by maxDepth is refused here (the
 * walk is recursive); the generous factor leaves ordinary depth errors to the compiler, with their path. */
export function schemaKey(schema: unknown, s: Settings): string {
  let text: string;
  try {
    text = canonicalJson({options: s, schema}, 20 * s.maxDepth + 100, ORDERED);
  } catch (err) {
    if (err instanceof TooDeep) throw tooDeep(s, "");
    throw err;
  }
  return sha256Hex(text);
}

export function compileSchema(schema: unknown, opts?: CompileOptions): CompiledSchema {
  const s = settings(opts);
  return compileWithKey(schema, s, schemaKey(schema, s));
}

/** Any JSON object (response_format json_object): `{"type": "object"}`, compiled once. */
export function compileJsonObject(): CompiledSchema {
  return JSON_OBJECT;
}

/** The time budget is for schemas that come with requests. The server's own grammars (this one, compiled when the module
 * loads, and the tool-call phases that hold no request schema) are small and fixed: on a machine busy enough to stall
 * the process past the budget, they must not fail (a server once exited at start on it). */
export const UNTIMED: CompileOptions = {maxMs: Number.POSITIVE_INFINITY};

/** Compiles with a key already computed (the cache computes it for the lookup). */
export function compileWithKey(schema: unknown, s: Settings, key: string): CompiledSchema {
  const started = performance.now();
  const tick = () => {
    if (performance.now() - started > s.maxMs) throw new SchemaError(`schema: compiling took longer than ${s.maxMs} ms`, "");
  };
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    throw invalid("", "a schema must be an object or a boolean");
  }
  const defs = collectDefs(schema);
  const ctx: NormContext = {root: schema, defs, closedObjects: s.closedObjects, toolSchema: s.toolSchema, maxEnum: s.maxEnum, maxDepth: s.maxDepth, tick};
  const root = normalize(schema, "", 0, ctx);
  const nodes = new Map<string, {node: Node; path: string}>();
  for (const [id, def] of defs) nodes.set(id, {node: normalize(def.raw, def.path, 1, ctx), path: def.path});

  const tooManyRules = (count: number): never => {
    throw new SchemaError(`schema: the grammar needs more than ${s.maxRules} rules (${count} so far)`, "");
  };
  const gen = new Generator({root, defs: nodes, maxRules: s.maxRules, tick, tooManyRules});
  gen.run();
  const gbnf = finishGrammar(gen, nodes, tooManyRules, s.maxRules);
  const bytes = Buffer.byteLength(gbnf, "utf8");
  if (bytes > s.maxGrammarBytes) throw new SchemaError(`schema: the grammar would be ${bytes} bytes (at most ${s.maxGrammarBytes})`, "");
  tick();
  return {gbnf, rootRule: "root", key};
}

const JSON_OBJECT: CompiledSchema = Object.freeze(compileSchema({type: "object"}, UNTIMED));
