// The one error a schema can cause. Messages are shown to API users as they are (a 400 body), so each
// names where in the schema the problem is ("schema/properties/email") and, for a refused keyword, which.

export class SchemaError extends Error {
  /** The refused keyword, when that is the reason; null for every other reason. */
  readonly keyword: string | null;
  /** JSON-pointer-ish path inside the schema ("" = the root), e.g. "/properties/name/pattern". */
  readonly path: string;

  constructor(message: string, path: string, keyword: string | null = null) {
    super(message);
    this.name = "SchemaError";
    this.path = path;
    this.keyword = keyword;
  }
}

/** One path segment, escaped as JSON pointer does (~ → ~0, / → ~1) so a key with "/" stays one segment. */
export function seg(key: string | number): string {
  return "/" + String(key).replace(/~/g, "~0").replace(/\//g, "~1");
}

/** How a path is shown in a message: "schema" for the root, "schema/properties/a" below it. */
export function where(path: string): string {
  return "schema" + path;
}

/** A problem with the schema at `path`: `schema/properties/a: <reason>`. */
export function invalid(path: string, reason: string, keyword: string | null = null): SchemaError {
  return new SchemaError(`${where(path)}: ${reason}`, path, keyword);
}
