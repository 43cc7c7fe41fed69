// Builds the real model handles from the settings: fetches and loads the main GGUF on the in-process engine,
// its disk tier and session registry, and the side models of SVC_NPU_MODELS on the same Llama. Part of the
// composition root (app.ts wires routes around whatever handles it is given; tests give it others).

import {join} from "node:path";
import {buildModelHandle, type ModelHandle} from "./pipeline/model-handle.ts";
import type {Config} from "./config/config.ts";
import {DiskStore} from "./engine/kv/disk-store.ts";
import {LlamaEngine} from "./engine/llama/llama-engine.ts";
import {stateIdentity} from "./engine/llama/state-identity.ts";
import {resolveModel} from "./models/resolve.ts";
import type {Logger} from "./observability/log.ts";
import {HandleRegistry} from "./sessions/handles.ts";
import {inspectFineTune} from "./side-models/fine-tune.ts";
import {parseSideModels} from "./side-models/registry.ts";
import {RUNNER_FACTORIES} from "./side-models/runners.ts";
import {SideModels} from "./side-models/side-models.ts";
import {ChatTemplate, TemplateRenderError} from "./templates/chat-template.ts";

export interface LoadedModels {
  main: ModelHandle;
  side: SideModels | null;
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

export async function loadModels(config: Config, logger: Logger): Promise<LoadedModels> {
  // Parsed before any model loads, so a misspelt side-model id stops the start at once.
  const sideEntries = parseSideModels(config.npuModels);
  const resolved = await resolveModel(config.model, {modelsDir: config.modelsDir, logger, progress: config.progress});
  logger.info("model ready", {path: resolved.path, sha256: resolved.sha256 ?? "not hashed (local path)"});
  const identity = await stateIdentity(resolved.path, resolved.sha256, config.ctxSize, config.flashAttention, config.engineBuild);
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
    decodeThreads: config.decodeThreads,
    engineBuild: config.engineBuild,
    flashAttention: config.flashAttention,
    speculation: config.speculation,
    exactReuse: config.exactReuse,
    probeStore: {dir: join(config.modelsDir, "probes"), key: identity},
    buildStore: join(config.modelsDir, "engine-builds"),
    logger,
  });
  if (engine.info.contextSize < config.ctxSize) {
    logger.warn("SVC_CTX_SIZE is above the model's training context; using the training context", {asked: config.ctxSize, using: engine.info.contextSize});
  }
  const template = loadTemplate(engine, logger);
  if (config.forkMap && !config.fork) logger.warn("SVC_FORK_MAP has no effect without SVC_FORK=1 (sessions are off)");
  const sessions = config.fork
    ? await HandleRegistry.open({dir: config.cacheDir ? join(config.cacheDir, "handles") : null, maxHandles: config.forkHandles, ttlS: config.forkTtl,
      identity, logger})
    : null;
  const main = buildModelHandle({
    identity: {id: config.modelId, path: resolved.path, sha256: resolved.sha256, source: resolved.source},
    engine,
    template,
    sessions,
    pipeline: {queueTimeoutMs: config.queueTimeout * 1000, maxTokensDefault: config.maxTokensDefault, schemaEscape: config.schemaEscape},
    logger,
  });
  const side = sideEntries.length === 0 ? null : await SideModels.load({
    entries: sideEntries,
    llama: engine.llama,
    factories: RUNNER_FACTORIES,
    inspectFineTune,
    queueLimit: config.npuQueue,
    queueTimeoutMs: config.queueTimeout * 1000,
    mainBusy: () => engine.status().regions.some((r) => r.state === "busy"),
    threads: engine.info.threads,
    modelsDir: config.modelsDir,
    progress: config.progress,
    logger,
  });
  return {main, side};
}
