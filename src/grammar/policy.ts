// The keyword policy of the spec's table ("Structured output (all routes)"), in one place: which keywords
// the grammar enforces, which it accepts without enforcing, and which it refuses. /health publishes the
// two lists, so they are exact copies of the spec's wording, not of what happens to be implemented.

/** Refused with a SchemaError naming the keyword: enforcing them needs more than a context-free grammar
 * can say cheaply (pattern, format, not, ...) or cross-member constraints (uniqueItems, min/maxProperties). */
export const REFUSED_KEYWORDS: readonly string[] = Object.freeze([
  "pattern", "format", "allOf", "not", "if", "then", "else", "patternProperties", "dependentRequired",
  "dependentSchemas", "uniqueItems", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
  "minProperties", "maxProperties", "prefixItems",
]);

/** Accepted and not enforced: numeric bounds (a grammar over digits cannot compare values sanely) and
 * annotations, which carry no constraint at all. */
export const UNENFORCED_KEYWORDS: readonly string[] = Object.freeze([
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
  "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly",
  "writeOnly", "contentEncoding", "contentMediaType",
]);

const REFUSED = new Set(REFUSED_KEYWORDS);

/** Refused keywords a tool's parameter schema may carry anyway (the spec's strict-tool rule): accepted
 * and not enforced there, because tool schemas written for other providers use them routinely and
 * refusing them would turn most strict tools into unenforced ones. */
export const TOOL_SCHEMA_UNENFORCED: ReadonlySet<string> = new Set(["pattern", "format"]);

/** True for a refused keyword; every `unevaluated*` keyword counts, as the spec writes it. */
export function isRefused(keyword: string): boolean {
  return REFUSED.has(keyword) || keyword.startsWith("unevaluated");
}

/** The refusal message, listing the whole refused set so the user sees what else to avoid. */
export function refusalReason(keyword: string): string {
  return `the keyword "${keyword}" is not supported (structured output refuses ${REFUSED_KEYWORDS.join(", ")})`;
}

/** Keywords that constrain the value. Siblings of `anyOf`/`oneOf`/`$ref` drawn from this set are merged
 * into each alternative; any other sibling (annotations, unknown keywords) leaves a plain union or ref. */
export const VALUE_KEYWORDS: ReadonlySet<string> = new Set([
  "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
  "maxLength", "enum", "const", "$ref", "anyOf", "oneOf", "nullable",
]);

/** Keywords whose presence (without `type`) says which JSON type is meant: the spec's type inference
 * (properties → object, items → array), extended to the other type-specific keywords. */
export const TYPE_HINTS: Readonly<Record<string, readonly string[]>> = {
  object: ["properties", "additionalProperties", "required"],
  array: ["items", "minItems", "maxItems"],
  string: ["minLength", "maxLength"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
};

export const JSON_TYPES: readonly string[] = ["object", "array", "string", "number", "integer", "boolean", "null"];
