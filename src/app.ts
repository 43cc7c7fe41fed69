// The composition root: the only place concrete classes are wired together.

import {readFileSync} from "node:fs";
import {join} from "node:path";
import type {FastifyInstance} from "fastify";
import {registerChatRoutes} from "./api/dialects/chat/routes.ts";
import {registerCompletionsRoutes} from "./api/dialects/completions/routes.ts";
import {registerMessagesRoutes} from "./api/dialects/messages/routes.ts";
import {registerResponsesRoutes} from "./api/dialects/responses/routes.ts";
import type {ServerDeps} from "./api/deps.ts";
import {registerStateRoutes} from "./api/ops/state-routes.ts";
import {registerMetricsRoute} from "./api/ops/metrics-routes.ts";
import {registerHandleRoutes} from "./api/ops/handle-routes.ts";
import {DiskStore} from "./engine/kv/disk-store.ts";
import {createMetrics} from "./observability/metrics.ts";
import {ServerStats} from "./observability/server-stats.ts";
import {HandleRegistry} from "./sessions/handles.ts";
import {SessionService} from "./sessions/session-service.ts";
import {CodingAgentMap} from "./sessions/coding-agent.ts";
import {stateIdentity} from "./engine/llama/state-identity.ts";
import {registerTokenizeRoutes} from "./api/ops/tokenize-routes.ts";
import {buildServer} from "./api/server.ts";
import type {Config} from "./config/config.ts";
import {LlamaEngine} from "./engine/llama/llama-engine.ts";
import {newCounters} from "./observability/counters.ts";
import {SchemaCache} from "./grammar/index.ts";
import {resolveModel} from "./models/resolve.ts";
import type {Logger} from "./observability/log.ts";
import {GenerationPipeline} from "./pipeline/generate.ts";
import {registerSideRoutes} from "./api/side/index.ts";
import {parseSideModels} from "./side-models/registry.ts";
import {RUNNER_FACTORIES} from "./side-models/runners.ts";
import {inspectFineTune} from "./side-models/fine-tune.ts";
import {SideModels} from "./side-models/side-models.ts";
import {ChatTemplate, TemplateRenderError} from "./templates/chat-template.ts";

export const VERSION: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

export interface App {
  server: FastifyInstance;
  deps: ServerDeps;
  close(): Promise<void>;
}

function loadTemplate(engine: LlamaEngine, logger: Logger): ChatTemplate | null {
  const source = engine.info.chatTemplate;
  if (!source) {
    logger.warn("the model has no chat template; /v1/chat/completions will refuse requests, /v1/completions works");
    return null;
  }
  try {
    const template = ChatTemplate.create(source, {bosToken: engine.info.bosText, eosToken: engine.info.eosText, origin: "gguf:tokenizer.chat_template"});
    if (template.check !== "ok") logger.warn("chat template self-check failed", {check: template.check});
    return template;
  } catch (err) {
    if (err instanceof TemplateRenderError) {
      logger.warn("the model's chat template cannot be used", {error: err.message});
      return null;
    }
    throw err;
  }
}

export async function createApp(config: Config, logger: Logger): Promise<App> {
  // Parsed before any model loads, so a misspelt side-model id stops the start at once.
  const sideEntries = parseSideModels(config.npuModels);
  const resolved = await resolveModel(config.model, {modelsDir: config.modelsDir, logger, progress: config.progress});
  logger.info("model ready", {path: resolved.path, sha256: resolved.sha256 ?? "not hashed (local path)"});
  const identity = await stateIdentity(resolved.path, resolved.sha256, config.ctxSize, config.flashAttention);
  const disk = config.cacheDir && config.promptCache
    ? await DiskStore.open({dir: join(config.cacheDir, "kv"), budgetBytes: config.cacheDiskMb * 1024 * 1024, identity, logger})
    : null;
  const engine = await LlamaEngine.load({
    disk,
    modelPath: resolved.path,
    regions: config.parallel,
    contextSize: config.ctxSize,
    promptPiece: config.promptPiece,
    promptCache: config.promptCache,
    threads: config.threads,
    flashAttention: config.flashAttention,
    speculation: config.speculation,
    logger,
  });
  if (engine.info.contextSize < config.ctxSize) {
    logger.warn("SVC_CTX_SIZE is above the model's training context; using the training context", {asked: config.ctxSize, using: engine.info.contextSize});
  }
  const template = loadTemplate(engine, logger);
  if (config.forkMap && !config.fork) logger.warn("SVC_FORK_MAP has no effect without SVC_FORK=1 (sessions are off)");
  const handles = config.fork
    ? await HandleRegistry.open({dir: config.cacheDir ? join(config.cacheDir, "handles") : null, maxHandles: config.forkHandles, ttlS: config.forkTtl,
      identity, logger})
    : null;
  const pipeline = new GenerationPipeline(engine, template, {
    queueTimeoutMs: config.queueTimeout * 1000,
    maxTokensDefault: config.maxTokensDefault,
    schemaEscape: config.schemaEscape,
  }, logger, handles ? new SessionService(handles, logger) : null);
  const side = sideEntries.length === 0 ? null : await SideModels.load({
    entries: sideEntries,
    llama: engine.llama,
    factories: RUNNER_FACTORIES,
    inspectFineTune,
    queueLimit: config.npuQueue,
    queueTimeoutMs: config.queueTimeout * 1000,
    threads: engine.info.threads,
    modelsDir: config.modelsDir,
    progress: config.progress,
    logger,
  });
  const deps: ServerDeps = {
    config,
    engine,
    pipeline,
    schemas: new SchemaCache(),
    counters: newCounters(),
    stats: new ServerStats(),
    template,
    model: {id: config.modelId, path: resolved.path, sha256: resolved.sha256, source: resolved.source},
    logger,
    agentMap: handles && config.forkMap === "coding-agent" ? new CodingAgentMap(handles) : null,
    side,
    version: VERSION,
    startedAt: new Date(),
  };
  const server = buildServer({bodyLimitBytes: Math.floor(config.bodyLimitMb * 1024 * 1024), apiKey: config.apiKey, logger});
  registerChatRoutes(server, deps);
  registerCompletionsRoutes(server, deps);
  registerResponsesRoutes(server, deps);
  registerMessagesRoutes(server, deps);
  registerStateRoutes(server, deps);
  registerTokenizeRoutes(server, deps);
  registerHandleRoutes(server, handles);
  if (side) registerSideRoutes(server, deps, side);
  registerMetricsRoute(server, createMetrics({
    stats: deps.stats,
    counters: deps.counters,
    cache: () => engine.cacheReport(),
    queue: () => {
      const st = engine.status();
      return {deferred: st.queued, longestWaitS: st.longestWaitS};
    },
    engineUp: () => engine.status().up,
    build: {version: VERSION, engine: engine.info.version, model: config.modelId},
    reservedTokens: () => engine.status().regions.filter((r) => r.state === "busy").reduce((n, r) => n + r.n_past, 0),
  }));
  return {
    server,
    deps,
    close: async () => {
      await server.close();
      // The engine first: it finishes the seals and keeps of replies already sent (a client was told
      // "accepted") and writes held conversations to disk, then the handle index is closed.
      await side?.close();
      await engine.close();
      await handles?.close();
    },
  };
}
