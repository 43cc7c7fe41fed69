// The side models named in SVC_NPU_MODELS, loaded beside the main model in the same process: one shared
// Llama (the engine's), one LlamaModel per distinct file (the SmolLM2-based ids share one), and a runner
// per id that owns its contexts. Every pass of every runner goes through the one SideExecutor.

import type {Llama, LlamaModel} from "../engine/index.ts";
import {ApiError, invalidField} from "../core/errors.ts";
import type {Logger} from "../observability/log.ts";
import type {ProgressMode} from "../models/progress.ts";
import {ChildRegistry} from "./children.ts";
import {SideExecutor, type ExecutorStatus} from "./executor.ts";
import {ROUTE_OF_KIND, type SideEntry, type SideKind, type SideModelDef} from "./registry.ts";

/** What a runner factory gets to load its model and build its contexts. */
export interface SideModelContext {
  llama: Llama;
  executor: SideExecutor;
  logger: Logger;
  modelsDir: string;
  progress?: ProgressMode;
  /** Threads for each side context (the engine's count: passes never overlap each other). */
  threads: number;
  /** One LlamaModel per file path, shared by every id that uses the file. */
  loadModel(path: string): Promise<LlamaModel>;
  /** Where a runner that runs a child process registers its supervisor, for /health and /metrics. */
  children: ChildRegistry;
  /** SVC_QUEUE_TIMEOUT in ms: how long a request may wait for a restarting child. */
  queueTimeoutMs: number;
  /** SVC_IMAGE_THREADS, SVC_IMAGE_REF_SIDE and SVC_PYTHON, for the image model's worker. */
  images: ImageSettings;
}

/** A loaded side model. Kind-specific runners extend this with their own methods. */
export interface SideRunner {
  readonly id: string;
  readonly kind: SideKind;
  /** The model file (or converted file) the runner serves. */
  readonly path: string;
  /** Shown in /health under side_models. */
  describe(): Record<string, unknown>;
  close(): Promise<void>;
}

export type RunnerFactory = (def: SideModelDef, ctx: SideModelContext) => Promise<SideRunner>;

/** Turns an own fine-tune directory into a definition, or refuses it with a line saying what was found. */
export type FineTuneInspector = (dir: string) => Promise<SideModelDef>;

export interface SideModelsOptions {
  entries: SideEntry[];
  llama: Llama;
  factories: Partial<Record<SideKind, RunnerFactory>>;
  inspectFineTune: FineTuneInspector;
  queueLimit: number;
  queueTimeoutMs: number;
  /** Whether the main model is running a request (side passes are paced then: executor.ts). */
  mainBusy?: () => boolean;
  threads: number;
  modelsDir: string;
  progress?: ProgressMode;
  logger: Logger;
  images?: ImageSettings;
}

export interface ImageSettings {
  threads: number;
  /** The side an edit's or variation's picture is encoded at (512: as taken). */
  refSide: number;
  python?: string;
}

export class SideModels {
  private constructor(readonly executor: SideExecutor, private readonly runners: Map<string, SideRunner>,
    private readonly models: Map<string, Promise<LlamaModel>>, readonly children: ChildRegistry) {}

  static async load(opts: SideModelsOptions): Promise<SideModels> {
    const executor = new SideExecutor({queueLimit: opts.queueLimit, timeoutMs: opts.queueTimeoutMs, mainBusy: opts.mainBusy});
    const models = new Map<string, Promise<LlamaModel>>();
    const children = new ChildRegistry();
    const ctx: SideModelContext = {
      llama: opts.llama, executor, logger: opts.logger, modelsDir: opts.modelsDir, progress: opts.progress, threads: opts.threads,
      children, queueTimeoutMs: opts.queueTimeoutMs, images: opts.images ?? {threads: 1, refSide: 512},
      loadModel: (path) => {
        let m = models.get(path);
        if (!m) {
          m = opts.llama.loadModel({modelPath: path, useMmap: true, defaultContextFlashAttention: false});
          models.set(path, m);
        }
        return m;
      },
    };
    const runners = new Map<string, SideRunner>();
    for (const entry of opts.entries) {
      const def = entry.type === "id" ? entry.def : await opts.inspectFineTune(entry.dir);
      if (runners.has(def.id)) throw new Error(`SVC_NPU_MODELS: two entries are served as "${def.id}"; rename one directory`);
      const factory = opts.factories[def.kind];
      if (!factory) throw new Error(`SVC_NPU_MODELS: ${def.id} (${def.kind}) cannot be served by this build`);
      const started = performance.now();
      const runner = await factory(def, ctx);
      runners.set(def.id, runner);
      opts.logger.info("side model ready", {id: def.id, kind: def.kind, path: runner.path, ms: Math.round(performance.now() - started)});
    }
    return new SideModels(executor, runners, models, children);
  }

  find(id: unknown): SideRunner | undefined {
    return typeof id === "string" ? this.runners.get(id) : undefined;
  }

  ofKind(kind: SideKind): SideRunner[] {
    return [...this.runners.values()].filter((r) => r.kind === kind);
  }

  list(): SideRunner[] {
    return [...this.runners.values()];
  }

  status(): ExecutorStatus {
    return this.executor.status();
  }

  /**
   * The runner a side route serves, by the request's `model`. A loaded side model of another kind is
   * refused naming its route; a name that is not loaded is refused naming the loaded models of the kind,
   * unless `anyName` (the route serves its one loaded model whatever the name, as /v1/decide does).
   */
  pick<R extends SideRunner>(kind: SideKind, model: unknown, opts: {param?: string; anyName?: (name: unknown) => boolean} = {}): R {
    const param = opts.param ?? "model";
    const named = this.find(model);
    if (named && named.kind === kind) return named as R;
    if (named) throw wrongRoute(named, param);
    const candidates = this.ofKind(kind);
    if (candidates.length === 0) {
      throw invalidField(param, `no ${kind} model is loaded; SVC_NPU_MODELS names ${this.list().map((r) => r.id).join(", ") || "none"}`);
    }
    if (opts.anyName?.(model) && candidates.length >= 1) return candidates[0] as R;
    throw invalidField(param, `must name a loaded ${kind} model: ${candidates.map((r) => r.id).join(", ")}`);
  }

  async close(): Promise<void> {
    for (const r of this.runners.values()) await r.close();
    for (const m of this.models.values()) await (await m).dispose();
  }
}

/** 400 for a side model sent to a route that does not serve its kind. */
export function wrongRoute(runner: SideRunner, param = "model"): ApiError {
  return invalidField(param, `${runner.id} is ${/^[aeiou]/.test(runner.kind) ? "an" : "a"} ${runner.kind} model; send it to ${ROUTE_OF_KIND[runner.kind]}`);
}
