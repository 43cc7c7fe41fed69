// How the raw text of an XML-style parameter value becomes JSON: by the parameter's schema (a string-only schema
// keeps the text as a string, a typed one parses it), else by what the text looks like.

import type {ReplyToolSpec as ToolSpec} from "../reply/parts.ts";

/** How a parameter's text becomes JSON: a string as is, parsed JSON, or parsed only if it looks like JSON. */
export type ValueKind = "string" | "json" | "auto";

/** The schema of one parameter decides how its text is typed; see ValueKind (schemaKind: for any schema). */
export function valueKind(tool: ToolSpec | undefined, param: string): ValueKind {
  const params = tool?.parameters;
  const props = isObject(params) ? params.properties : undefined;
  const schema = isObject(props) && Object.hasOwn(props, param) ? props[param] : undefined;
  return isObject(schema) ? schemaKind(schema) : "auto";
}

export function schemaKind(schema: Record<string, unknown>): ValueKind {
  const {type, anyOf, oneOf} = schema;
  const values = schema.enum;
  if (Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === "string")) return "string";
  if (typeof schema.const === "string") return "string";
  if (typeof type === "string") return type === "string" ? "string" : "json";
  if (Array.isArray(type) && type.length > 0) return type.every((t) => t === "string") ? "string" : "json";
  const alternatives = anyOf ?? oneOf;
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    const kinds = alternatives.map((a) => (isObject(a) ? schemaKind(a) : "auto"));
    if (kinds.every((k) => k === "string")) return "string";
    if (kinds.every((k) => k !== "auto")) return "json";
  }
  return "auto";
}

/** The JSON text of a buffered value. A declared non-string type that does not parse falls back to a string. */
export function typedValue(kind: ValueKind, text: string): string {
  if (kind === "string") return JSON.stringify(text);
  const t = text.trim();
  // Python-style literals are common in these models' output when the schema asks for JSON ones.
  const literal = kind === "json" ? PYTHON_LITERALS[t] : undefined;
  if (literal !== undefined) return literal;
  try {
    const parsed: unknown = JSON.parse(t);
    if (kind === "json" || typeof parsed !== "string") return JSON.stringify(parsed);
  } catch {
    // not JSON: a string
  }
  return JSON.stringify(text);
}

const PYTHON_LITERALS: Record<string, string> = {True: "true", False: "false", None: "null"};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
