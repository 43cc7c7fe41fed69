// Body validation with zod, turning the first problem into a 400 that names the field and the rule.

import type {z} from "zod";
import {invalidField, invalidRequest} from "../../core/errors.ts";

export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out;
}

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = body;
  for (const p of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function describe(issue: z.core.$ZodIssue, body: unknown): string {
  switch (issue.code) {
    case "invalid_type":
      // zod does not report the input value; look it up so "missing" and "wrong type" read differently.
      return valueAt(body, issue.path) === undefined ? `is required (${article(issue.expected)})` : `must be ${article(issue.expected)}`;
    case "too_small":
      if (issue.origin === "array") return `must have at least ${issue.minimum} item(s)`;
      if (issue.origin === "string") return `must be at least ${issue.minimum} character(s) long`;
      return `must be ${issue.inclusive ? "at least" : "greater than"} ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "array") return `must have at most ${issue.maximum} item(s)`;
      if (issue.origin === "string") return `must be at most ${issue.maximum} character(s) long`;
      return `must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      return issue.message && issue.message !== "Invalid input" ? issue.message : "has an unsupported shape";
    default:
      return issue.message;
  }
}

function article(type: string): string {
  if (type === "int") return "an integer";
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalidRequest("the request body must be a JSON object");
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = fieldPath(issue.path);
  return (() => {
    throw path ? invalidField(path, describe(issue, body)) : invalidRequest(describe(issue, body));
  })();
}
