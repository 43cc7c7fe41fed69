// Structured output, route-neutral: the JSON schema (or "any JSON object") a request asks its answer to follow,
// compiled once per distinct schema into the grammar the engine enforces. The pipeline compiles it beside the
// tool-call grammars; each route only says how it names the field (chat: response_format; Responses: text.format;
// Messages: output_config.format), so a refusal names the field the client sent.

import {invalidField, invalidRequest} from "../core/errors.ts";
import type {ResponseFormat} from "../core/generation.ts";
import {compileJsonObject, SchemaError, type SchemaCache} from "../grammar/index.ts";

export interface StructuredOutput {
  schemas: SchemaCache;
  /** SVC_GRAMMAR */
  enabled: boolean;
}

export interface CompiledFormat {
  gbnf: string;
  key: string;
  /** The value is always an object (a tool call or a preamble may then come first, see the spec). */
  rootObject: boolean;
}

export function compileResponseFormat(asked: {format: ResponseFormat; field: string} | null, ctx: StructuredOutput): CompiledFormat | null {
  if (asked === null) return null;
  const {format, field} = asked;
  if (!ctx.enabled) throw invalidRequest(`${field}: structured output is turned off on this server (SVC_GRAMMAR=0)`, field);
  if (format.kind === "json_object") return {...compileJsonObject(), rootObject: true};
  try {
    const compiled = ctx.schemas.get(format.schema);
    return {gbnf: compiled.gbnf, key: compiled.key, rootObject: isObjectSchema(format.schema)};
  } catch (err) {
    if (err instanceof SchemaError) throw invalidField(field, err.message);
    throw err;
  }
}

/** Only `type: "object"` (alone) counts: a union or a $ref root could be something else. */
function isObjectSchema(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  const s = schema as {type?: unknown; anyOf?: unknown; oneOf?: unknown; $ref?: unknown};
  return s.type === "object" && s.anyOf === undefined && s.oneOf === undefined && s.$ref === undefined;
}
