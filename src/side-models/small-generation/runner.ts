// The small generation model (`nx3.5-2b`): the same generation stack as the main model (LlamaEngine,
// GenerationPipeline, the model's own chat template), on a context of its own with one region, on the
// process's one Llama and the side models' shared LlamaModel of the file. Every decode pass goes through
// the side executor (gated-engine.ts).

import {LlamaEngine, nativeJinja, type Engine} from "../../engine/index.ts";
import {resolveModel} from "../../models/resolve.ts";
import {GenerationPipeline} from "../../pipeline/generate.ts";
import {SchemaCache} from "../../grammar/index.ts";
import type {ModelHandle} from "../../pipeline/model-handle.ts";
import {ChatTemplate, TemplateRenderError} from "../../templates/chat-template.ts";
import type {Logger} from "../../observability/log.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {ExecutorGatedEngine} from "./gated-engine.ts";
import {SMALL_GENERATION_LIMITS, SMALL_GENERATION_SAMPLING} from "./limits.ts";

/** Prompt piece: one evaluation pass of the prompt (the main engine's default, aligned to absolute positions). */
const PROMPT_PIECE = 64;

export class SmallGenerationRunner implements SideRunner {
  readonly kind = "small-generation" as const;

  private constructor(
    readonly id: string,
    readonly path: string,
    private readonly llamaEngine: LlamaEngine,
    /** The engine the pipeline drives: the LlamaEngine behind the side executor. */
    readonly engine: Engine,
    readonly template: ChatTemplate,
    readonly source: string,
    readonly sha256: string | null,
  ) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<SmallGenerationRunner> {
    const resolved = await resolveModel(def.source, {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress});
    const model = await ctx.loadModel(resolved.path);
    const llamaEngine = await LlamaEngine.load({
      llama: ctx.llama,
      model,
      modelPath: resolved.path,
      regions: 1,
      // Clamped by the engine to the model's training context (SmolLM2: 8,192): then that is the real limit.
      contextSize: SMALL_GENERATION_LIMITS.positions,
      promptPiece: PROMPT_PIECE,
      // Off: a reused prefix would need the reply sealed after release, an evaluation outside any decode run
      // that the executor could not see. The small model answers each request from its prompt.
      promptCache: false,
      threads: ctx.threads,
      // As before speculation came: its steps are executor passes, one token each, and nothing here needs drafts.
      flashAttention: false,
      speculation: "off",
      logger: ctx.logger,
    });
    try {
      const template = chatTemplateOf(def.id, llamaEngine);
      const engine = new ExecutorGatedEngine(llamaEngine, ctx.executor, def.id);
      return new SmallGenerationRunner(def.id, resolved.path, llamaEngine, engine, template, resolved.source, resolved.sha256);
    } catch (err) {
      await llamaEngine.close();
      throw err;
    }
  }

  private modelHandle: ModelHandle | null = null;

  /**
   * The small model as the generation routes see it: the pipeline over the gated engine, its template and
   * identity (no sessions, no prompt cache). Built on first use by the route, which knows SVC_QUEUE_TIMEOUT
   * (the time a request may wait for the small model's one region) and SVC_MAX_TOOL_CALLS; the runner factory is not
   * given the settings.
   */
  handle(opts: {queueTimeoutMs: number; maxToolCalls: number; logger?: Logger}): ModelHandle {
    this.modelHandle ??= {
      identity: {id: this.id, path: this.path, sha256: this.sha256, source: this.source},
      engine: this.engine,
      pipeline: new GenerationPipeline(this.engine, this.template, {
        queueTimeoutMs: opts.queueTimeoutMs,
        maxTokensDefault: SMALL_GENERATION_LIMITS.defaultMaxTokens,
        schemaEscape: false,
        maxToolCalls: opts.maxToolCalls,
        // Text only: the chat route refuses a response format for this model before it reaches the pipeline.
        structured: {schemas: new SchemaCache(), enabled: false},
      }, opts.logger, null),
      template: this.template,
      sessions: null,
      close: () => this.close(),
    };
    return this.modelHandle;
  }

  /** Positions of prompt plus answer, as the context really allocated them. */
  get contextSize(): number {
    return this.llamaEngine.info.contextSize;
  }

  describe(): Record<string, unknown> {
    return {
      context_size: this.contextSize,
      train_context_size: this.llamaEngine.info.trainContextSize,
      max_prompt_tokens: Math.min(SMALL_GENERATION_LIMITS.promptTokens, this.contextSize - 1),
      max_tokens_default: SMALL_GENERATION_LIMITS.defaultMaxTokens,
      sampling_defaults: {temperature: SMALL_GENERATION_SAMPLING.temperature, top_k: SMALL_GENERATION_SAMPLING.topK,
        presence_penalty: SMALL_GENERATION_SAMPLING.presencePenalty},
      thinking: false,
      tools: false,
    };
  }

  async close(): Promise<void> {
    // Disposes the context only: the model is shared (SideModels disposes it) and the Llama is the main engine's.
    await this.llamaEngine.close();
  }
}

function chatTemplateOf(id: string, engine: LlamaEngine): ChatTemplate {
  const source = engine.info.chatTemplate;
  if (!source) throw new Error(`SVC_NPU_MODELS: ${id}: the model file ${engine.info.modelPath} has no chat template, which small generation needs`);
  try {
    return ChatTemplate.create(source, {bosToken: engine.info.bosText, eosToken: engine.info.eosText, origin: "gguf:tokenizer.chat_template",
      native: nativeJinja(engine.llama), metadata: {architecture: engine.info.architecture, modelName: engine.info.modelName}});
  } catch (err) {
    if (err instanceof TemplateRenderError) throw new Error(`SVC_NPU_MODELS: ${id}: the model's chat template cannot be used (${err.message})`);
    throw err;
  }
}

/** The factory of runners.ts. */
export const createSmallGenerationRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> => SmallGenerationRunner.load(def, ctx);
