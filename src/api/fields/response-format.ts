// Structured output requests, route-neutral: a JSON schema (or "any JSON object") compiled once per
// distinct schema into the grammar the engine enforces. Each route maps its own field onto this
// (chat: response_format; later text.format and output_config.format).

import {invalidField, invalidRequest} from "../../core/errors.ts";
import {compileJsonObject, SchemaError, type SchemaCache} from "../../grammar/index.ts";

export type FormatAsk = {kind: "text"} | {kind: "json_object"} | {kind: "json_schema"; schema: unknown};

export interface FormatContext {
  schemas: SchemaCache;
  /** SVC_GRAMMAR */
  enabled: boolean;
  /** How the route names the schema field, for messages (e.g. "response_format.json_schema.schema"). */
  field: string;
}

export interface CompiledFormat {
  gbnf: string;
  key: string;
  /** The value is always an object (a tool call or a preamble may then come first, see the spec). */
  rootObject: boolean;
}

export function compileFormat(ask: FormatAsk, ctx: FormatContext): CompiledFormat | null {
  if (ask.kind === "text") return null;
  if (!ctx.enabled) throw invalidRequest(`${ctx.field}: structured output is turned off on this server (SVC_GRAMMAR=0)`, ctx.field);
  if (ask.kind === "json_object") return {...compileJsonObject(), rootObject: true};
  try {
    const compiled = ctx.schemas.get(ask.schema);
    return {gbnf: compiled.gbnf, key: compiled.key, rootObject: isObjectSchema(ask.schema)};
  } catch (err) {
    if (err instanceof SchemaError) throw invalidField(ctx.field, err.message);
    throw err;
  }
}

/** Only `type: "object"` (alone) counts: a union or a $ref root could be something else. */
function isObjectSchema(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  const s = schema as {type?: unknown; anyOf?: unknown; oneOf?: unknown; $ref?: unknown};
  return s.type === "object" && s.anyOf === undefined && s.oneOf === undefined && s.$ref === undefined;
}
