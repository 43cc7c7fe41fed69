// The routes fastify registered, each with its own body limit when it sets one: collected by an onRoute hook that
// is installed before any route, and read by /openapi.json (which documents them) and /health (which states each
// body route's limit).

import type {FastifyInstance} from "fastify";

export interface RegisteredRoute {
  method: string;
  /** Fastify's path (`/responses/:id`). */
  url: string;
  /** The route's own body limit in bytes, when it sets one (the transcription route); else the server's. */
  bodyLimit?: number;
}

const lists = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** Starts collecting the routes registered from now on (once per server); returns the live list. */
export function trackRoutes(app: FastifyInstance): RegisteredRoute[] {
  const known = lists.get(app);
  if (known) return known;
  const routes: RegisteredRoute[] = [];
  lists.set(app, routes);
  app.addHook("onRoute", (r) => {
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
      routes.push({method, url: r.url, ...(r.bodyLimit !== undefined ? {bodyLimit: r.bodyLimit} : {})});
    }
  });
  return routes;
}

/** The routes registered since trackRoutes(app); empty when nobody tracked them. */
export function registeredRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return lists.get(app) ?? [];
}
