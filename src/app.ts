// The composition root: the only place concrete classes are wired together (load-models.ts builds the real
// model handles it is given).

import {readFileSync} from "node:fs";
import type {FastifyInstance} from "fastify";
import {registerChatRoutes} from "./api/dialects/chat/routes.ts";
import {registerCompletionsRoutes} from "./api/dialects/completions/routes.ts";
import {registerMessagesRoutes} from "./api/dialects/messages/routes.ts";
import {registerResponsesRoutes} from "./api/dialects/responses/routes.ts";
import type {ModelHandle, ServerDeps} from "./api/deps.ts";
import {registerStateRoutes} from "./api/ops/state-routes.ts";
import {registerMetricsRoute} from "./api/ops/metrics-routes.ts";
import {registerHandleRoutes} from "./api/ops/handle-routes.ts";
import {createMetrics} from "./observability/metrics.ts";
import {ServerStats} from "./observability/server-stats.ts";
import {CodingAgentMap} from "./sessions/coding-agent.ts";
import {registerTokenizeRoutes} from "./api/ops/tokenize-routes.ts";
import {registerApplyTemplateRoute} from "./api/ops/apply-template-route.ts";
import {buildServer} from "./api/server.ts";
import type {Config} from "./config/config.ts";
import {newCounters} from "./observability/counters.ts";
import type {Logger} from "./observability/log.ts";
import {registerSideRoutes} from "./api/side/index.ts";
import {buildChatWatchers, buildModelRouter} from "./api/routing/index.ts";
import {installOpenApi} from "./api/openapi/route.ts";
import {registerPlaygroundRoutes} from "./api/playground/route.ts";
import type {SideModels} from "./side-models/side-models.ts";

export const VERSION: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

export interface App {
  server: FastifyInstance;
  deps: ServerDeps;
  /**
   * Stops the server: no new connections; requests in flight get `graceMs` (default: none) to finish, then the
   * generations still running are cancelled (503 `server_shutting_down`, a stream's final error event); then the
   * side models' children stop and the main model finishes what answered replies owe (keeps, held conversations
   * to the disk tier). `cutShort()` during the wait ends the grace at once (a second signal).
   */
  close(opts?: {graceMs?: number; logger?: Logger}): Promise<void>;
  cutShort(): void;
}

/** After the grace, how long cancelled requests get to send their last words before their connections are cut. */
const CANCELLED_CLOSE_MS = 5000;

/**
 * Wires the routes around the models it is given: main.ts hands it the real handles (load-models.ts); tests
 * hand it handles over an engine double, so every route runs in-process without a model.
 */
export async function createApp(config: Config, models: {main: ModelHandle; side?: SideModels | null}, logger: Logger): Promise<App> {
  const {main} = models;
  const side = models.side ?? null;
  const engine = main.engine;
  const shutdown = new AbortController();
  let endGrace: () => void = () => undefined;
  const base = {
    config,
    main,
    counters: newCounters(),
    stats: new ServerStats(),
    logger,
    agentMap: main.sessions && config.forkMap === "coding-agent" ? new CodingAgentMap(main.sessions) : null,
    side,
    version: VERSION,
    startedAt: new Date(),
    shutdown: shutdown.signal,
  };
  const deps: ServerDeps = {...base, models: buildModelRouter(base), watchers: buildChatWatchers(base)};
  const server = buildServer({bodyLimitBytes: Math.floor(config.bodyLimitMb * 1024 * 1024), apiKey: config.apiKey, logger,
    timeouts: {headersMs: config.headersTimeout * 1000, requestMs: config.bodyTimeout * 1000}, maxConnections: config.maxConnections});
  // First, so its onRoute hook sees every route registered below.
  installOpenApi(server, {version: VERSION, keyed: Boolean(config.apiKey), maxTokensCap: config.maxTokensCap,
    bodyLimitBytes: Math.floor(config.bodyLimitMb * 1024 * 1024), logger});
  registerChatRoutes(server, deps);
  registerCompletionsRoutes(server, deps);
  registerResponsesRoutes(server, deps);
  registerMessagesRoutes(server, deps);
  registerStateRoutes(server, deps);
  registerTokenizeRoutes(server, deps);
  registerApplyTemplateRoute(server, deps);
  registerHandleRoutes(server, main.sessions);
  if (side) registerSideRoutes(server, deps, side);
  registerPlaygroundRoutes(server);
  registerMetricsRoute(server, createMetrics({
    stats: deps.stats,
    counters: deps.counters,
    cache: () => engine.cacheReport(),
    queue: () => {
      const st = engine.status();
      return {deferred: st.queued, longestWaitS: st.longestWaitS};
    },
    engineUp: () => engine.status().up,
    build: {version: VERSION, engine: engine.info.version, model: main.identity.id},
    reservedTokens: () => engine.status().regions.filter((r) => r.state === "busy").reduce((n, r) => n + r.n_past, 0),
    children: () => [...main.children?.() ?? [], ...side?.children.list() ?? []],
  }));
  return {
    server,
    deps,
    close: async (opts = {}) => {
      // Stops listening at once; answers 503 to a request that still arrives on a kept-alive connection; resolves
      // when every connection has ended.
      const closed = server.close();
      // Node closes the connections idle at this moment; one whose reply ends later would stay open for its keep-alive
      // time (72 s) and hold the shutdown that long, so idle connections are closed as they appear.
      const closeIdle = setInterval(() => server.server.closeIdleConnections(), 100);
      const graceOver = new Promise<void>((resolve) => {
        endGrace = resolve;
        if (opts.graceMs !== undefined) setTimeout(resolve, opts.graceMs).unref();
        else resolve();
      });
      const finished = await Promise.race([closed.then(() => true), graceOver.then(() => false)]);
      if (!finished) {
        opts.logger?.info("shutdown grace over: cancelling the requests still in flight", {running: deps.stats.processing});
        shutdown.abort();
        const cut = setTimeout(() => server.server.closeAllConnections(), CANCELLED_CLOSE_MS);
        await closed;
        clearTimeout(cut);
      }
      clearInterval(closeIdle);
      await side?.close();
      await main.close();
    },
    cutShort: () => endGrace(),
  };
}
