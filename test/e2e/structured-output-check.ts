// What a constrained reply must be (shared by test/e2e/structured-output.test.ts and the slow tier's corpus
// run): the request for a corpus entry, and the check that the reply ended normally, parses, validates with
// ajv against the enforced part of its schema, and is exactly the JSON.

import assert from "node:assert/strict";
import ajvModule from "ajv/dist/2020.js";
import type OpenAI from "openai";
import {UNENFORCED_KEYWORDS} from "../../src/grammar/index.ts";
import type {CorpusEntry} from "../fixtures/schemas/corpus.ts";

// ajv ships CommonJS: its class is the module itself and also its `default`.
const ajv = new ajvModule.default({strict: false, allErrors: true});

export function ask(entry: CorpusEntry, extra: Record<string, unknown> = {}) {
  return {
    model: "m",
    messages: [{role: "system" as const, content: "Answer with JSON only."}, {role: "user" as const, content: entry.prompt}],
    response_format: {type: "json_schema" as const, json_schema: {name: entry.name.replace(/[^a-zA-Z0-9_-]/g, "_"), schema: entry.schema}},
    max_tokens: 512,
    ...extra,
  };
}

/** Runs fn over items with `width` requests in flight at all times (a new one starts as one ends); results in item order. */
export async function inFlight<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({length: Math.min(width, items.length)}, async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
  }));
  return out;
}

/**
 * The schema as the server promises to enforce it: the spec's "accepted, not enforced" keywords (numeric
 * bounds, multipleOf, annotations) removed at schema positions, so ajv judges exactly the enforced part.
 */
function enforcedPart(schema: unknown): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if ((UNENFORCED_KEYWORDS as readonly string[]).includes(k)) continue;
    if (k === "properties" || k === "$defs" || k === "definitions") out[k] = Object.fromEntries(Object.entries(v as object).map(([n, sub]) => [n, enforcedPart(sub)]));
    else if (k === "anyOf" || k === "oneOf") out[k] = (v as unknown[]).map(enforcedPart);
    else if (k === "items" || k === "additionalProperties") out[k] = enforcedPart(v);
    else out[k] = v;
  }
  return out;
}

export function checkReply(entry: CorpusEntry, label: string, res: OpenAI.Chat.Completions.ChatCompletion): unknown {
  const choice = res.choices[0]!;
  const content = choice.message.content ?? "";
  assert.equal(choice.finish_reason, "stop", `${entry.name} (${label}) ended by ${choice.finish_reason}: ${content.slice(0, 200)}`);
  let value: unknown;
  assert.doesNotThrow(() => (value = JSON.parse(content)), `${entry.name} (${label}) is JSON: ${content.slice(0, 200)}`);
  const validate = ajv.compile(enforcedPart(entry.schema) as object);
  assert.ok(validate(value), `${entry.name} (${label}) validates: ${content.slice(0, 200)} — ${ajv.errorsText(validate.errors)}`);
  assert.equal(content, content.trim(), "the reply is exactly the JSON: nothing after the value");
  return value;
}

