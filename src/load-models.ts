// Builds the real model handles from the settings: fetches and loads the main GGUF on the in-process engine,
// its disk tier and session registry, and the side models of SVC_NPU_MODELS on the same Llama. Part of the
// composition root (app.ts wires routes around whatever handles it is given; tests give it others).

import {readFileSync} from "node:fs";
import {availableParallelism} from "node:os";
import {join} from "node:path";
import {buildModelHandle, type ModelHandle} from "./pipeline/model-handle.ts";
import type {PipelineOptions} from "./pipeline/generate.ts";
import {SchemaCache} from "./grammar/index.ts";
import {ConfigError, type Config} from "./config/config.ts";
import {beyondTrainingWarning, DiskStore, LlamaEngine, mainContextAsk, modelIdentity, nativeJinja, RemoteEngine, ReplicaSetupError, stateIdentity,
  type EngineInfo, type StateIdentity} from "./engine/index.ts";
import {resolveModel} from "./models/resolve.ts";
import type {Logger} from "./observability/log.ts";
import {HandleRegistry} from "./sessions/handles.ts";
import {inspectFineTune} from "./side-models/fine-tune.ts";
import {parseSideModels, type SideEntry} from "./side-models/registry.ts";
import type {LlamaServerChild} from "./side-models/llama-server-child.ts";
import {startVisionChild} from "./load-vision.ts";
import {RUNNER_FACTORIES} from "./side-models/runners.ts";
import {SideModels} from "./side-models/side-models.ts";
import {ChatTemplate, TemplateRenderError, type NativeJinjaFactory} from "./templates/chat-template.ts";

export interface LoadedModels {
  main: ModelHandle;
  side: SideModels | null;
}

/** The GGUF's own template, as `origin` names it (/health reports it as source "gguf"). */
const GGUF_TEMPLATE_ORIGIN = "gguf:tokenizer.chat_template";

/** SVC_CHAT_TEMPLATE's file, read before any model loads so a wrong path stops the start at once. */
export interface TemplateFile {
  path: string;
  text: string;
}

const USE_OWN = "or unset SVC_CHAT_TEMPLATE to use the model's own template";

/** A problem with SVC_CHAT_TEMPLATE, as a bad setting: main.ts prints it and exits with 2. */
function templateFileError(path: string, problem: string): ConfigError {
  return new ConfigError([`SVC_CHAT_TEMPLATE=${JSON.stringify(path)}: ${problem}`]);
}

/** Throws ConfigError when the file is missing, unreadable or empty. */
export function readTemplateFile(path: string): TemplateFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw templateFileError(path, `cannot be read (${(err as Error).message}); give the path of a Jinja chat template file, ${USE_OWN}`);
  }
  if (text.trim() === "") throw templateFileError(path, `the file is empty; put a Jinja chat template in it, ${USE_OWN}`);
  return {path, text};
}

/** "line N: does not parse: <JS engine's error> (llama.cpp's Jinja engine: <its error>)"; the message itself for other failures. */
function parseFailure(err: TemplateRenderError): string {
  const p = err.parse;
  if (!p) return err.message;
  return `${p.line !== null ? `line ${p.line}: ` : ""}does not parse: ${p.js}${p.native !== null ? ` (llama.cpp's Jinja engine: ${p.native})` : ""}`;
}

export interface TemplateInputs {
  /** The model's tokens and GGUF metadata (its own template, BOS/EOS text, architecture and name). */
  info: Pick<EngineInfo, "chatTemplate" | "bosText" | "eosText" | "architecture" | "modelName">;
  /** llama.cpp's Jinja engine, for templates the JS engine cannot run; absent: JS only (the engine double). */
  native?: NativeJinjaFactory;
  /** SVC_CHAT_TEMPLATE's file, which replaces the GGUF's template; null: the GGUF's. */
  file: TemplateFile | null;
  /** The model file, named when its own template cannot be used. */
  modelPath?: string;
  logger: Logger;
}

/**
 * The GGUF's own template cannot serve the chat routes (it does not parse, or fails the start probe): main.ts prints
 * the message and stops the start with exit code 2, as for a bad SVC_CHAT_TEMPLATE file.
 */
export class UnusableTemplateError extends Error {
  override name = "UnusableTemplateError";
}

const GIVE_ONE = "give a working template with SVC_CHAT_TEMPLATE=<file> (or --chat-template-file <file>)";

/**
 * The main model's chat template. A template that does not parse, or that parses but fails the start probe (it cannot
 * render a user message: template-probes.ts startProbe), stops the start, whatever its source: SVC_CHAT_TEMPLATE's
 * file with a ConfigError naming the setting, the GGUF's own with an UnusableTemplateError naming the model file and
 * `tokenizer.chat_template`; both with the line (when the template does not parse) and the renderer's error. A GGUF
 * without any template gives null on purpose (a warning; the chat routes refuse, /v1/completions works: base models
 * have none). A failed self-check (a fuller conversation) only warns, and /health reports it.
 */
export function loadChatTemplate(inputs: TemplateInputs): ChatTemplate | null {
  const {info, file, logger} = inputs;
  const source = file ? file.text : info.chatTemplate;
  if (!source) {
    logger.warn("the model has no chat template; /v1/chat/completions will refuse requests, /v1/completions works (SVC_CHAT_TEMPLATE can supply one)");
    return null;
  }
  const origin = file ? file.path : GGUF_TEMPLATE_ORIGIN;
  const refuse = (problem: string): never => {
    if (file) throw templateFileError(file.path, `${problem}; fix the template, ${USE_OWN}`);
    throw new UnusableTemplateError(`the model's own chat template cannot be used: ${inputs.modelPath ?? "the model file"}, ` +
      `tokenizer.chat_template: ${problem}; ${GIVE_ONE}`);
  };
  let template: ChatTemplate;
  try {
    template = ChatTemplate.create(source, {bosToken: info.bosText, eosToken: info.eosText, origin, native: inputs.native,
      metadata: {architecture: info.architecture, modelName: info.modelName}});
  } catch (err) {
    if (!(err instanceof TemplateRenderError)) throw err;
    return refuse(parseFailure(err));
  }
  if (template.startProblem !== null) refuse(`parses, but ${template.startProblem}`);
  const fields = {source: file ? file.path : "gguf", family: template.family.id, engine: template.engine, sha256: template.sha256};
  if (template.check !== "ok") logger.warn("chat template self-check failed", {...fields, check: template.check});
  else logger.info("chat template", fields);
  return template;
}

export async function loadModels(config: Config, logger: Logger): Promise<LoadedModels> {
  // Parsed and read before any model loads, so a misspelt side-model id or a wrong template path stops the start at once.
  const sideEntries = parseSideModels(config.npuModels);
  const templateFile = config.chatTemplate ? readTemplateFile(config.chatTemplate) : null;
  const resolved = await resolveModel(config.model, {modelsDir: config.modelsDir, logger, progress: config.progress});
  logger.info("model ready", {path: resolved.path, sha256: resolved.sha256 ?? "not hashed (local path)"});
  if (config.engine) return loadRemote(config, config.engine, resolved, templateFile, logger, sideEntries);
  if (config.mmproj) {
    const child = await startVisionChild(config, resolved.path, logger);
    try {
      return await loadRemote(config, [child.url], resolved, templateFile, logger, sideEntries, child);
    } catch (err) {
      await child.supervisor.stop();
      throw err;
    }
  }
  const contextAsk = mainContextAsk(config.ctxSize);
  const identity = await stateIdentity(resolved.path, resolved.sha256, contextAsk.positions, config.flashAttention, config.engineBuild,
    config.threads ?? availableParallelism());
  const disk = config.cacheDir && config.promptCache
    ? await DiskStore.open({dir: join(config.cacheDir, "kv"), budgetBytes: config.cacheDiskMb * 1024 * 1024, identity, logger})
    : null;
  const engine = await LlamaEngine.load({
    disk,
    modelPath: resolved.path,
    regions: config.parallel,
    contextSize: contextAsk.positions,
    pastTraining: contextAsk.pastTraining,
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
  const beyond = beyondTrainingWarning(engine.info.contextSize, engine.info.trainContextSize, engine.info.ropeScaling);
  if (beyond) logger.warn(beyond);
  const template = loadChatTemplate({info: engine.info, native: nativeJinja(engine.llama), file: templateFile, modelPath: resolved.path,
    logger});
  const main = buildModelHandle({
    identity: {id: config.modelId, path: resolved.path, sha256: resolved.sha256, source: resolved.source},
    engine,
    template,
    sessions: await openSessions(config, identity, logger),
    pipeline: pipelineOptions(config),
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
    images: {threads: config.imageThreads, refSide: config.imageRefSide, python: config.python},
  });
  return {main, side};
}

/**
 * SVC_ENGINE: the generation model runs on remote replicas; svc reads the same GGUF's vocabulary and template.
 * A replica that cannot serve stops the start (ConfigError: one line naming it). Side models, which need the
 * in-process engine, were refused with the settings (config.ts). Named sessions keep, per handle, which replica
 * holds the state (engine/remote/remote-sessions.ts); a restart with other replicas drops them.
 */
async function loadRemote(config: Config, urls: string[], resolved: Awaited<ReturnType<typeof resolveModel>>, templateFile: TemplateFile | null,
  logger: Logger, sideEntries: SideEntry[], child?: LlamaServerChild): Promise<LoadedModels> {
  let engine: RemoteEngine;
  try {
    engine = await RemoteEngine.load({urls, modelPath: resolved.path, routing: config.routing, promptPiece: config.promptPiece, logger});
  } catch (err) {
    if (err instanceof ReplicaSetupError) throw new ConfigError([err.message]);
    throw err;
  }
  const template = loadChatTemplate({info: engine.info, native: nativeJinja(engine.vocabulary.llama), file: templateFile,
    modelPath: resolved.path, logger});
  const identity = {model: await modelIdentity(resolved.path, resolved.sha256), engine: "llama-server replica slots", replicas: urls.join(",")};
  const handle = buildModelHandle({
    identity: {id: config.modelId, path: resolved.path, sha256: resolved.sha256, source: resolved.source},
    engine,
    template,
    sessions: await openSessions(config, identity, logger),
    pipeline: pipelineOptions(config),
    logger,
  });
  // svc's own llama-server (SVC_MMPROJ) is listed among the children and stopped after the engine.
  const main: ModelHandle = !child ? handle : {...handle, children: () => [child.supervisor.status()],
    close: async () => {
      await handle.close();
      await child.supervisor.stop();
    }};
  // Side models run on the vocabulary's llama.cpp instance (only with SVC_MMPROJ: SVC_ENGINE refuses them in config.ts).
  const side = sideEntries.length === 0 ? null : await SideModels.load({
    entries: sideEntries,
    llama: engine.vocabulary.llama,
    factories: RUNNER_FACTORIES,
    inspectFineTune,
    queueLimit: config.npuQueue,
    queueTimeoutMs: config.queueTimeout * 1000,
    mainBusy: () => engine.status().regions.some((r) => r.state === "busy"),
    threads: config.threads ?? availableParallelism(),
    modelsDir: config.modelsDir,
    progress: config.progress,
    logger,
    images: {threads: config.imageThreads, refSide: config.imageRefSide, python: config.python},
  });
  return {main, side};
}

async function openSessions(config: Config, identity: StateIdentity, logger: Logger): Promise<HandleRegistry | null> {
  if (config.forkMap && !config.fork) logger.warn("SVC_FORK_MAP has no effect without SVC_FORK=1 (sessions are off)");
  if (!config.fork) return null;
  return HandleRegistry.open({dir: config.cacheDir ? join(config.cacheDir, "handles") : null, maxHandles: config.forkHandles, ttlS: config.forkTtl,
    identity, logger});
}

function pipelineOptions(config: Config): PipelineOptions {
  return {queueTimeoutMs: config.queueTimeout * 1000, maxTokensDefault: config.maxTokensDefault, schemaEscape: config.schemaEscape,
    maxToolCalls: config.maxToolCalls, structured: {schemas: new SchemaCache(), enabled: config.grammar}};
}
