// GET /openapi.json. Installed before any other route so fastify's onRoute hook sees every registration; the
// document is built once when the server is ready (all routes known) and served as is. It sits behind the auth
// hook like every route but GET /health. A registered route without a registry.ts entry is left out and logged
// at startup (the unit test makes it fatal), so a forgotten entry is visible without taking the server down.

import type {FastifyInstance} from "fastify";
import type {Logger} from "../../observability/log.ts";
import {hasOwnErrorShape} from "../server.ts";
import {buildOpenApiDocument} from "./document.ts";
import {trackRoutes, type RegisteredRoute} from "../registered-routes.ts";

export interface OpenApiOptions {
  version: string;
  keyed: boolean;
  maxTokensCap: number;
  /** SVC_BODY_LIMIT_MB in bytes. */
  bodyLimitBytes: number;
  logger: Logger;
}

export interface OpenApiStatus {
  /** Every route fastify registered after installOpenApi, HEAD included. */
  routes: RegisteredRoute[];
  /** Registered routes with no registry entry ("METHOD /path"), known once the server is ready. */
  undocumented: string[];
}

const statuses = new WeakMap<FastifyInstance, OpenApiStatus>();

/** What the document was built from, for the test that holds the document to the live route list. */
export function openApiStatus(app: FastifyInstance): OpenApiStatus | undefined {
  return statuses.get(app);
}

export function installOpenApi(app: FastifyInstance, opts: OpenApiOptions): void {
  const status: OpenApiStatus = {routes: trackRoutes(app), undocumented: []};
  statuses.set(app, status);
  let body: string | null = null;
  app.addHook("onReady", async () => {
    const {document, undocumented} = buildOpenApiDocument(status.routes, {version: opts.version, keyed: opts.keyed, maxTokensCap: opts.maxTokensCap,
      bodyLimitBytes: opts.bodyLimitBytes, anthropicErrors: (path) => hasOwnErrorShape(app, path)});
    status.undocumented = undocumented;
    if (undocumented.length > 0) {
      opts.logger.warn("routes missing from /openapi.json (add them to src/api/openapi/registry.ts)", {routes: undocumented.join(", ")});
    }
    body = JSON.stringify(document);
  });
  app.get("/openapi.json", async (_req, reply) => reply.header("content-type", "application/json; charset=utf-8").send(body));
}
