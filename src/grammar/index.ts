// JSON Schema → GBNF for structured output. Pure: no engine imports; the engine loads the text.
//
// Policy (the spec's table, "Structured output (all routes)"):
//   enforced     type, properties, required, additionalProperties, items, minItems, maxItems, minLength,
//                maxLength, enum, const, anyOf, oneOf (as anyOf), $ref/$defs/definitions (also recursive)
//   unenforced   UNENFORCED_KEYWORDS: numeric bounds and annotations
//   refused      REFUSED_KEYWORDS (and any unevaluated*): SchemaError naming the keyword and its path
//   unknown      any other keyword is accepted and ignored, without a log line
// Choices the spec leaves open:
//   - `nullable: true` (OpenAPI) allows null as well.
//   - Extra keys never equal a listed key; their names are spelled canonically (keys.ts).
//   - enum/const values are emitted as canonical JSON (keys sorted, no whitespace).
//   - Without `type`, the type-specific keywords present say which types are meant (properties →
//     object, items → array, minLength → string, minimum → number); with none, any JSON value.
//   - Keywords beside anyOf/oneOf/$ref are merged into each branch / the target (merge.ts).
//   - Counts above 2000 (llama.cpp's repetition limit) are split into counts it accepts; only a maximum
//     more than 2000 above its minimum is left open (as llama.cpp would do silently), see gbnf.ts `rep`.
//   - Whitespace goes after { [ , : and before } ] only (not before a comma), in objects and arrays alike.
// Tool schemas (option toolSchema, used by src/syntax/phases.ts): pattern and format are accepted and not
// enforced instead of refused, and the root object is closed (absent additionalProperties = false).

export {SchemaError} from "./errors.ts";
export {REFUSED_KEYWORDS, UNENFORCED_KEYWORDS} from "./policy.ts";
export {compileSchema, compileJsonObject, type CompileOptions, type CompiledSchema} from "./compile.ts";
export {SchemaCache} from "./cache.ts";
// Strict tool calls' phase grammars are built in src/syntax/ (one module per call shape), on ToolBuild.
export {TOOL_SCHEMA_UNENFORCED} from "./policy.ts";
export {withAnswerPrefix} from "./answer-prefix.ts";
