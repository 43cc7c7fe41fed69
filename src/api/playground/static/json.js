// JSON for the page: a highlighter that returns token runs (rendered by Preact as escaped text, never as HTML)
// and a small JSON Schema checker for the reply under a schema box. The checker covers the keywords the
// server's grammar enforces (see /health structured_output.enforced_keywords) plus the numeric bounds, so a
// reply that breaks the schema shows why instead of a bare "invalid".

const TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false)\b|\b(null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|([{}[\],])/g;

/** [{cls, text}] runs covering `text` exactly; cls is "" for whitespace and anything unrecognised. */
export function highlight(text) {
  const runs = [];
  let last = 0;
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > last) runs.push({cls: "", text: text.slice(last, m.index)});
    if (m[1] !== undefined) {
      runs.push({cls: m[2] !== undefined ? "j-key" : "j-str", text: m[1]});
      if (m[2] !== undefined) runs.push({cls: "j-punct", text: m[2]});
    } else if (m[3] !== undefined) runs.push({cls: "j-bool", text: m[0]});
    else if (m[4] !== undefined) runs.push({cls: "j-null", text: m[0]});
    else if (m[5] !== undefined) runs.push({cls: "j-num", text: m[0]});
    else runs.push({cls: "j-punct", text: m[0]});
    last = m.index + m[0].length;
  }
  if (last < text.length) runs.push({cls: "", text: text.slice(last)});
  return runs;
}

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function typeMatches(want, got) {
  return want === got || (want === "number" && got === "integer");
}

function resolve(root, ref) {
  if (!ref.startsWith("#/")) return null;
  let node = root;
  for (const part of ref.slice(2).split("/")) node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return node ?? null;
}

/** The places `value` breaks `schema`, as ["$.path: why", ...]; empty when it conforms. */
export function validate(schema, value, root = schema, path = "$", depth = 0) {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${path}: not allowed`];
  if (depth > 64) return [`${path}: schema nests too deep to check`];
  if (schema.$ref) {
    const target = resolve(root, schema.$ref);
    return target ? validate(target, value, root, path, depth + 1) : [`${path}: cannot resolve ${schema.$ref}`];
  }
  const errs = [];
  const got = typeOf(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => typeMatches(t, got))) return [`${path}: expected ${types.join(" or ")}, got ${got}`];
  }
  if (schema.const !== undefined && JSON.stringify(schema.const) !== JSON.stringify(value)) errs.push(`${path}: must be ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) errs.push(`${path}: must be one of ${JSON.stringify(schema.enum)}`);
  if (got === "string") {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) errs.push(`${path}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && n > schema.maxLength) errs.push(`${path}: longer than ${schema.maxLength}`);
  }
  if (got === "number" || got === "integer") {
    if (schema.minimum !== undefined && value < schema.minimum) errs.push(`${path}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errs.push(`${path}: above ${schema.maximum}`);
  }
  if (got === "array") {
    if (schema.minItems !== undefined && value.length < schema.minItems) errs.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errs.push(`${path}: more than ${schema.maxItems} items`);
    if (schema.items !== undefined) value.forEach((v, i) => errs.push(...validate(schema.items, v, root, `${path}[${i}]`, depth + 1)));
  }
  if (got === "object") {
    const props = schema.properties ?? {};
    for (const k of schema.required ?? []) if (!(k in value)) errs.push(`${path}: missing "${k}"`);
    for (const [k, v] of Object.entries(value)) {
      const at = `${path}.${k}`;
      if (k in props) errs.push(...validate(props[k], v, root, at, depth + 1));
      else if (schema.additionalProperties === false) errs.push(`${at}: not a declared property`);
      else if (typeof schema.additionalProperties === "object") errs.push(...validate(schema.additionalProperties, v, root, at, depth + 1));
    }
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (schema[key] && !schema[key].some((s) => validate(s, value, root, path, depth + 1).length === 0)) errs.push(`${path}: matches none of ${key}`);
  }
  for (const s of schema.allOf ?? []) errs.push(...validate(s, value, root, path, depth + 1));
  return errs;
}

/** The reply checked against the schema: {ok, errors, pretty} (pretty is the reformatted JSON when it parses). */
export function checkReply(schema, text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return {ok: false, errors: [`not JSON: ${err.message}`], pretty: text};
  }
  const errors = validate(schema, value);
  return {ok: errors.length === 0, errors, pretty: JSON.stringify(value, null, 2)};
}
