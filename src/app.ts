// The composition root: the only place concrete classes are wired together.

import {readFileSync} from "node:fs";
import type {FastifyInstance} from "fastify";
import {registerChatRoutes} from "./api/dialects/chat/routes.ts";
import {registerCompletionsRoutes} from "./api/dialects/completions/routes.ts";
import type {ServerDeps} from "./api/deps.ts";
import {registerStateRoutes} from "./api/ops/state-routes.ts";
import {registerTokenizeRoutes} from "./api/ops/tokenize-routes.ts";
import {buildServer} from "./api/server.ts";
import type {Config} from "./config/config.ts";
import {LlamaEngine} from "./engine/llama/llama-engine.ts";
import {newCounters} from "./observability/counters.ts";
import {SchemaCache} from "./grammar/index.ts";
import {resolveModel} from "./models/resolve.ts";
import type {Logger} from "./observability/log.ts";
import {GenerationPipeline} from "./pipeline/generate.ts";
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
  const resolved = await resolveModel(config.model, {modelsDir: config.modelsDir, logger, progress: config.progress});
  logger.info("model ready", {path: resolved.path, sha256: resolved.sha256 ?? "not hashed (local path)"});
  const engine = await LlamaEngine.load({
    modelPath: resolved.path,
    regions: config.parallel,
    contextSize: config.ctxSize,
    promptPiece: config.promptPiece,
    promptCache: config.promptCache,
    threads: config.threads,
    logger,
  });
  if (engine.info.contextSize < config.ctxSize) {
    logger.warn("SVC_CTX_SIZE is above the model's training context; using the training context", {asked: config.ctxSize, using: engine.info.contextSize});
  }
  const template = loadTemplate(engine, logger);
  const pipeline = new GenerationPipeline(engine, template, {
    queueTimeoutMs: config.queueTimeout * 1000,
    maxTokensDefault: config.maxTokensDefault,
    schemaEscape: config.schemaEscape,
  }, logger);
  const deps: ServerDeps = {
    config,
    engine,
    pipeline,
    schemas: new SchemaCache(),
    counters: newCounters(),
    template,
    model: {id: config.modelId, path: resolved.path, sha256: resolved.sha256, source: resolved.source},
    logger,
    version: VERSION,
    startedAt: new Date(),
  };
  const server = buildServer({bodyLimitBytes: Math.floor(config.bodyLimitMb * 1024 * 1024), apiKey: config.apiKey, logger});
  registerChatRoutes(server, deps);
  registerCompletionsRoutes(server, deps);
  registerStateRoutes(server, deps);
  registerTokenizeRoutes(server, deps);
  return {
    server,
    deps,
    close: async () => {
      await server.close();
      await engine.close();
    },
  };
}
