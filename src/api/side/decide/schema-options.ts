// The options of a decision on the chat route, read from `response_format.json_schema.schema`: an `enum`;
// a `oneOf` of `{const, description}` items; `{type: boolean}`; or an object with exactly one property
// holding one of those. The answer is written back in the schema's shape ("x", true, {"prop":"x"}).

import {invalidField} from "../../../core/errors.ts";
import {DECISION_LIMITS, type DecisionQuestion} from "../../../side-models/decider/prompt.ts";

export interface SchemaOptions {
  /** The JSON value of each option (what the answer holds). */
  values: unknown[];
  /** The name of the one property when the schema is an object, else null. */
  property: string | null;
  /** How the prompt writes the options (the question text is filled in by the caller). */
  form: {kind: "options"; options: {label: string; description?: string | null}[]} | {kind: "yes-no"};
  /** A description found on the schema itself (the question when json_schema.description is absent). */
  description: string | null;
}

const SCHEMA = "response_format.json_schema.schema";
const SHAPES = "must be an enum, a oneOf of {const, description} items, {type: boolean}, or an object with exactly one property holding one of those";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export function readSchemaOptions(schema: unknown): SchemaOptions {
  if (!isObject(schema)) throw invalidField(SCHEMA, `must be an object that ${SHAPES}`);
  if (schema.type === "object" || isObject(schema.properties)) {
    const props = schema.properties;
    if (!isObject(props) || Object.keys(props).length !== 1) {
      throw invalidField(`${SCHEMA}.properties`, `a decision object must have exactly one property (found ${isObject(props) ? Object.keys(props).length : 0})`);
    }
    const [name, inner] = Object.entries(props)[0]!;
    const read = readLeaf(inner, `${SCHEMA}.properties.${name}`);
    return {...read, property: name, description: read.description ?? stringOrNull(schema.description)};
  }
  return {...readLeaf(schema, SCHEMA), property: null};
}

function readLeaf(schema: unknown, param: string): Omit<SchemaOptions, "property"> {
  if (!isObject(schema)) throw invalidField(param, SHAPES);
  const description = stringOrNull(schema.description);
  if (Array.isArray(schema.enum)) {
    const values = schema.enum as unknown[];
    checkCount(values.length, `${param}.enum`);
    checkDistinct(values, `${param}.enum`);
    return {values, form: {kind: "options", options: values.map((v) => ({label: labelOf(v)}))}, description};
  }
  if (Array.isArray(schema.oneOf)) {
    const items = schema.oneOf as unknown[];
    checkCount(items.length, `${param}.oneOf`);
    const values = items.map((item, i) => {
      if (!isObject(item) || !("const" in item)) {
        throw invalidField(`${param}.oneOf[${i}]`, "must be an object with a `const` (and optionally a `description`)");
      }
      if (item.description !== undefined && typeof item.description !== "string") throw invalidField(`${param}.oneOf[${i}].description`, "must be a string");
      return item.const;
    });
    checkDistinct(values, `${param}.oneOf`);
    const options = items.map((item, i) => ({label: labelOf(values[i]), description: ((item as Json).description as string | undefined) ?? null}));
    return {values, form: {kind: "options", options}, description};
  }
  if (schema.type === "boolean") return {values: [true, false], form: {kind: "yes-no"}, description};
  throw invalidField(param, SHAPES);
}

function checkCount(n: number, param: string): void {
  if (n < DECISION_LIMITS.minOptions || n > DECISION_LIMITS.maxOptions) {
    throw invalidField(param, `a decision takes ${DECISION_LIMITS.minOptions} to ${DECISION_LIMITS.maxOptions} options (found ${n})`);
  }
}

function checkDistinct(values: unknown[], param: string): void {
  const seen = new Set<string>();
  for (const v of values) {
    const k = JSON.stringify(v);
    if (k === undefined) throw invalidField(param, "options must be JSON values");
    if (seen.has(k)) throw invalidField(param, `options must differ (${k} appears twice)`);
    seen.add(k);
  }
}

/** How an option is written in the prompt: strings as they are, other values as JSON. */
function labelOf(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function stringOrNull(v: unknown): string | null {
  return typeof v === "string" && v.trim() !== "" ? v : null;
}

/** The answer for option i as JSON text in the schema's shape. */
export function answerJson(opts: SchemaOptions, i: number): string {
  const value = opts.values[i];
  return JSON.stringify(opts.property === null ? value : {[opts.property]: value});
}

export function questionOf(opts: SchemaOptions, question: string): DecisionQuestion {
  return opts.form.kind === "yes-no" ? {kind: "yes-no", question} : {kind: "options", question, options: opts.form.options};
}
