// Builds the OpenAPI 3.1 document from the routes fastify actually registered and the entries of registry.ts.
// Request schemas come from zod (z.toJSONSchema, input side: what a client may send), response shapes from
// shapes.ts. A registered route with no entry is returned in `undocumented` rather than guessed at: the caller
// decides whether that is fatal (the test) or a warning (a running server).

import {z} from "zod";
import {RESPONSE_SCHEMAS, ref, type JsonSchema} from "./shapes.ts";
import {ROUTE_DOCS, type RouteDoc} from "./registry.ts";
import {BUDGET_ALIASES} from "../fields/common.ts";
import {isOpenRoute} from "../auth.ts";
import type {RegisteredRoute} from "../registered-routes.ts";
import {FROM_HEADER, KEEP_HEADER, SESSION_NAME_PATTERN} from "../fields/session-headers.ts";

const SESSION_NAME: JsonSchema = {type: "string", pattern: SESSION_NAME_PATTERN};

export type {RegisteredRoute} from "../registered-routes.ts";

export interface DocumentOptions {
  version: string;
  /** SVC_API_KEY is set: every operation but the open ones (auth.ts isOpenRoute: GET /health...) needs the key. */
  keyed: boolean;
  /** SVC_MAX_TOKENS_CAP: the routes that refuse a budget above it say so in their schema. */
  maxTokensCap: number;
  /** Paths whose errors use Anthropic's shape (server.ts registerErrorShape). */
  anthropicErrors: (path: string) => boolean;
  /** SVC_BODY_LIMIT_MB in bytes: the body limit of every route that sets none of its own. */
  bodyLimitBytes: number;
}

/** Statuses any route can answer: bad body or JSON, unknown id, body too large, wrong media type, failure, busy. */
const COMMON_ERRORS = [400, 404, 413, 415, 500, 503];

const REASON: Record<number, string> = {400: "The request is invalid; the message names the field and the rule", 401: "No valid API key",
  404: "Not found", 413: "The body is larger than SVC_BODY_LIMIT_MB", 415: "Unsupported media type", 422: "The body is malformed for this route",
  500: "Internal error", 503: "Busy, out of memory, or a side model's process restarting; see Retry-After"};

/** `/responses/:id` → `/responses/{id}`; a trailing wildcard (`/playground/*`) → `{path}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}").replace(/\*$/, "{path}");
}

export function routeKey(method: string, url: string): string {
  return `${method} ${openApiPath(url)}`;
}

/** The JSON Schema of a request body: zod's input side, without the per-schema `$schema` (the document sets the dialect). */
export function requestJsonSchema(schema: z.ZodType): JsonSchema {
  const {$schema: _drop, ...rest} = z.toJSONSchema(schema, {io: "input", target: "draft-2020-12", unrepresentable: "any"}) as JsonSchema;
  return rest;
}

/**
 * The budget fields' bound is this server's SVC_MAX_TOKENS_CAP, a setting, so the shared zod field cannot carry it:
 * it is written into the document here, on the routes that refuse a budget above the cap (fields/common.ts resolveBudget).
 */
function capBudget(schema: JsonSchema, cap: number): void {
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  for (const name of BUDGET_ALIASES) {
    const field = props[name];
    if (!field) continue;
    for (const branch of [field, ...((field.anyOf as JsonSchema[] | undefined) ?? [])]) {
      if (branch.type === "integer") branch.maximum = cap;
    }
  }
}

function operation(method: string, path: string, doc: RouteDoc, opts: DocumentOptions, bodyLimit: number): JsonSchema {
  const errorBody = {"application/json": {schema: ref(opts.anthropicErrors(path) ? "AnthropicError" : "OpenAiError")}};
  const okContent: JsonSchema = {[doc.ok.mediaType ?? "application/json"]: {schema: ref(doc.ok.schema)}};
  // Schemathesis (and OpenAPI 3.2's itemSchema) read an event stream's schema as that of each event.
  if (doc.streams) okContent["text/event-stream"] = {schema: ref("SseEvent")};
  const responses: JsonSchema = {"200": {description: "Success", content: okContent}};
  // The auth hook's own rule (auth.ts), so the document marks open exactly what the server leaves open.
  const open = isOpenRoute(method, path);
  const statuses = [...COMMON_ERRORS, ...(doc.errors ?? []), ...(opts.keyed && !open ? [401] : [])].sort((a, b) => a - b);
  for (const s of statuses) responses[String(s)] = {description: REASON[s] ?? "Error", content: errorBody};
  const op: JsonSchema = {
    operationId: `${method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? "").toUpperCase()) || "Root"}`,
    summary: doc.summary,
    tags: [doc.tag],
    responses,
  };
  const parameters: JsonSchema[] = Object.entries(doc.params ?? {}).map(([name, description]) =>
    ({name, in: "path", required: true, description, schema: name === "name" ? SESSION_NAME : {type: "string"}}));
  if (doc.sessions) {
    parameters.push(
      {name: KEEP_HEADER, in: "header", required: false, schema: SESSION_NAME,
        description: "SVC_FORK=1: keep the reply's end state under this name (release it with DELETE /svc/handles/{name})"},
      {name: FROM_HEADER, in: "header", required: false, schema: SESSION_NAME, description: "SVC_FORK=1: start from the state kept under this name"});
    // Schemathesis's stateful phase (and any client reading links) learns that a kept name is what the DELETE takes.
    (responses["200"] as JsonSchema).links = {ReleaseKeptSession: {operationId: "deleteSvcHandlesName",
      parameters: {name: `$request.header.${KEEP_HEADER}`}, description: "Release the session this request kept"}};
  }
  if (parameters.length > 0) op.parameters = parameters;
  if (doc.body) {
    const schema = requestJsonSchema(doc.body);
    if (doc.budgetRefusedOverCap) capBudget(schema, opts.maxTokensCap);
    op.requestBody = {required: true, content: {"application/json": {schema}}};
  }
  if (doc.multipart) op.requestBody = {required: true, content: {"multipart/form-data": {schema: requestJsonSchema(doc.multipart)}}};
  if (op.requestBody) {
    // The limit the server enforces on this route (413 past it), as a number a gateway or client can read.
    (op.requestBody as JsonSchema).description = `At most ${bodyLimit} bytes; a larger body gets 413`;
    op["x-body-limit-bytes"] = bodyLimit;
    (responses["413"] as JsonSchema).description = `The body is larger than ${bodyLimit} bytes, this route's limit`;
  }
  if (opts.keyed && open) op.security = [];
  return op;
}

export function buildOpenApiDocument(routes: readonly RegisteredRoute[], opts: DocumentOptions): {document: JsonSchema; undocumented: string[]} {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const undocumented: string[] = [];
  for (const r of routes) {
    // Fastify adds HEAD beside every GET (and OPTIONS only when asked): they answer as their GET does.
    if (r.method === "HEAD" || r.method === "OPTIONS") continue;
    const key = routeKey(r.method, r.url);
    const doc = ROUTE_DOCS.get(key);
    if (!doc) {
      undocumented.push(key);
      continue;
    }
    const path = openApiPath(r.url);
    (paths[path] ??= {})[r.method.toLowerCase()] = operation(r.method, path, doc, opts, r.bodyLimit ?? opts.bodyLimitBytes);
  }
  const document: JsonSchema = {
    openapi: "3.1.0",
    info: {title: "svc", version: opts.version,
      description: "One port, every API: OpenAI chat, completions and Responses, Anthropic Messages, ops routes, " +
        "and the side models' routes when loaded. Generated at startup from the routes this server registered."},
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    tags: [{name: "generation"}, {name: "ops"}, {name: "side"}],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: RESPONSE_SCHEMAS,
      ...(opts.keyed ? {securitySchemes: {bearer: {type: "http", scheme: "bearer"}, apiKey: {type: "apiKey", in: "header", name: "x-api-key"}}} : {}),
    },
    ...(opts.keyed ? {security: [{bearer: []}, {apiKey: []}]} : {}),
  };
  return {document, undocumented};
}
