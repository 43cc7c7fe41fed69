// The HTTP server: body parsing (JSON only, valid UTF-8, size-limited), the auth hook, one error mapping
// for every route, and 404 for unknown routes. Routes are registered by app.ts.

import Fastify, {type FastifyInstance, type FastifyReply, type FastifyRequest} from "fastify";
import {ApiError} from "../core/errors.ts";
import type {Logger} from "../observability/log.ts";
import {isOpenRoute, makeKeyCheck} from "./auth.ts";
import {openAiErrorBody, toApiError} from "./error-body.ts";

export interface ServerOptions {
  bodyLimitBytes: number;
  /** Against slow clients: the headers, and the whole request, must arrive within these (SVC_HEADERS_TIMEOUT_S, SVC_BODY_TIMEOUT_S). */
  timeouts?: {headersMs: number; requestMs: number};
  /** Most open connections (SVC_MAX_CONNECTIONS). */
  maxConnections?: number;
  apiKey?: string;
  logger: Logger;
}

const utf8 = new TextDecoder("utf-8", {fatal: true});
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

function parseJsonBody(_req: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void): void {
  if (body.length === 0) return done(null, undefined);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return done(new ApiError("invalid_request", "the request body is not valid UTF-8"));
  }
  try {
    done(null, JSON.parse(text));
  } catch (err) {
    done(new ApiError("invalid_request", `the request body is not valid JSON: ${(err as Error).message}`));
  }
}

/**
 * A route family's own error body (the Messages-style route answers in Anthropic's shape). It is given the reply
 * too, for what the body repeats from the headers (Anthropic's request_id); headers it sets go out with it.
 */
export type ErrorShape = (err: ApiError, reply: FastifyReply) => unknown;

const errorShapes = new WeakMap<FastifyInstance, {prefix: string; shape: ErrorShape}[]>();

/**
 * Errors on paths under `prefix` (query string ignored) use `shape` instead of the OpenAI shape; this
 * covers what fails before a handler runs too (401, unparsable JSON, 413).
 */
export function registerErrorShape(app: FastifyInstance, prefix: string, shape: ErrorShape): void {
  const list = errorShapes.get(app) ?? [];
  list.push({prefix, shape});
  errorShapes.set(app, list);
}

function shapeFor(app: FastifyInstance, path: string): ErrorShape | undefined {
  return errorShapes.get(app)?.find((s) => path === s.prefix || path.startsWith(`${s.prefix}/`))?.shape;
}

/** Whether errors on `path` use a route family's own shape rather than OpenAI's (for /openapi.json). */
export function hasOwnErrorShape(app: FastifyInstance, path: string): boolean {
  return shapeFor(app, path) !== undefined;
}

export function errorBodyFor(reply: FastifyReply, err: ApiError): unknown {
  const hit = shapeFor(reply.server, reply.request.url.split("?")[0]!);
  return hit ? hit(err, reply) : openAiErrorBody(err);
}

export function sendError(reply: FastifyReply, err: ApiError): void {
  if (reply.sent || reply.raw.headersSent) return;
  // The body first: a shape may set headers that must go out with it.
  const body = errorBodyFor(reply, err);
  reply.status(err.status).headers(err.headers).send(body);
}

export function buildServer(opts: ServerOptions): FastifyInstance {
  const timeouts = opts.timeouts ?? {headersMs: 10_000, requestMs: 60_000};
  const app = Fastify({
    logger: false,
    bodyLimit: opts.bodyLimitBytes,
    return503OnClosing: true,
    // Node checks these deadlines on a timer (every 30 s by default): once a second, so a slow client is cut off
    // close to its deadline. A request is handled only once its body is complete, so a slow one never holds a region.
    requestTimeout: timeouts.requestMs,
    http: {headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: 1000},
  });
  if (opts.maxConnections !== undefined) app.server.maxConnections = opts.maxConnections;

  // A body announced as too large is refused before parsing, but only after the client has finished
  // sending it: answering mid-upload and closing makes the client fail with EPIPE instead of reading 413.
  // Up to DRAIN_LIMIT_BYTES are read and dropped; past that the connection is simply closed.
  // A route may set its own limit (the transcription route takes recordings up to 25 MiB).
  app.addHook("onRequest", (req, _reply, done) => {
    const length = Number(req.headers["content-length"]);
    const limit = req.routeOptions.bodyLimit ?? opts.bodyLimitBytes;
    if (!(length > limit)) return done();
    const err = new ApiError("payload_too_large", limit === opts.bodyLimitBytes
      ? `the request body has ${length} bytes; this server takes at most ${limit} (SVC_BODY_LIMIT_MB)`
      : `the request body has ${length} bytes; this route takes at most ${limit}`);
    if (length > DRAIN_LIMIT_BYTES) return done(err);
    req.raw.on("end", () => done(err));
    req.raw.on("error", () => done(err));
    req.raw.resume();
  });

  app.removeAllContentTypeParsers();
  // Any content type is read as JSON: curl without -H still works, and anything that is not JSON gets a clear 400.
  app.addContentTypeParser("*", {parseAs: "buffer"}, parseJsonBody);

  if (opts.apiKey) {
    const check = makeKeyCheck(opts.apiKey);
    app.addHook("onRequest", async (req) => {
      if (!isOpenRoute(req.method, req.url)) check(req.headers);
    });
  }

  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.status >= 500 && apiErr.kind !== "engine_busy") {
      opts.logger.error("request failed", {method: req.method, url: req.url, error: (err as Error)?.stack ?? String(err)});
    }
    sendError(reply, apiErr);
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0];
    sendError(reply, new ApiError("not_found", `no route ${req.method} ${path} on this server; see GET /health for what it serves`));
  });

  return app;
}
