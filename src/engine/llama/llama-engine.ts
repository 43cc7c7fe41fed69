// The node-llama-cpp engine: one model, one context whose sequences are the regions, continuous batching
// across them through our batch policy, CPU only, threads = cores unless set.

import {availableParallelism} from "node:os";
import {getLlama, LlamaLogLevel, TokenBias, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token} from "node-llama-cpp";
import type {Logger} from "../../observability/log.ts";
import type {DecodeJob, DecodeRun, DecodeStats, Engine, EngineInfo, EnginePhases, EngineStatus, KeepHook, RegionLease, ReleaseOptions, ResumeState,
  SpeculationInfo} from "../engine.ts";
import type {CacheReport, DiskReport} from "../../core/engine-report.ts";
import type {DiskStore} from "../kv/disk-store.ts";
import {exactLength} from "../kv/region-memory.ts";
import {contextPositions, type ContextAsk} from "../context-plan.ts";
import {EngineCancelledError} from "../errors.ts";
import {RegionQueue} from "../region-queue.ts";
import type {BatchPolicyState} from "./batch-strategy.ts";
import {acceptGrammarToken, isEndOfGeneration, PINNED_NODE_LLAMA_CPP, sequenceIdOf} from "./internals.ts";
import {llamaBuildOptions, type EngineBuild} from "./engine-build.ts";
import {keepBuilds, restoreBuilds} from "./engine-build-store.ts";
import {measureDecodeThreads} from "./decode-threads.ts";
import {Dispatcher} from "./dispatch.ts";
import {reuseMatchAtLoad, speculationAtLoad, STEP_COST_TEXT} from "./load-measures.ts";
import {modelFacts} from "./model-facts.ts";
import type {CutPlan} from "../kv/region-memory.ts";
import {MERGED_TILED_ROWS, mergedRowsFor, TILED_ROWS, type Span} from "../kv/row-classes.ts";
import {classifyTokens, type TokenClasses} from "../json-closing.ts";
import {GrammarConstraint, GrammarStore} from "./grammar-constraint.ts";
import {runOnRegion, type GrammarBinder} from "./region-decode.ts";
import {LONG_PREFILL_TOKENS, RegionPool} from "./region-pool.ts";
import {tokenTextToBytes, type VocabKind} from "./token-bytes.ts";
import {LookupRecord, type DraftPolicy, type SpeculationMode} from "./prompt-lookup.ts";

export interface LlamaEngineOptions {
  modelPath: string;
  regions: number;
  contextSize: number;
  /** Past the model's training length: "clamp" (default) or "extend" (SVC_CTX_SIZE set by the user; context-plan.ts). */
  pastTraining?: ContextAsk["pastTraining"];
  promptPiece: number;
  /** Reuse what regions (and the disk tier) hold (see kv/region-memory.ts). */
  promptCache: boolean;
  /** The disk tier, when SVC_CACHE_DIR is set. */
  disk?: DiskStore | null;
  threads?: number;
  /** Threads for batches of decode steps; "auto" measures at load (see decode-threads.ts). Default: `threads`. */
  decodeThreads?: "auto" | number;
  /** Flash attention in the context (SVC_FLASH_ATTENTION); speculation needs it. */
  flashAttention: boolean;
  /** Which engine library build runs (engine-build.ts). Default: the prebuilt binary. */
  engineBuild?: EngineBuild;
  /** Prompt-lookup speculation for eligible greedy runs (SVC_SPECULATION); see prompt-lookup.ts. */
  speculation: SpeculationMode;
  /** How reused KV is matched (SVC_EXACT_REUSE): "auto" probes at load for the row-class rule; "pieces" never uses it. Default "auto". */
  exactReuse?: "auto" | "pieces";
  /** Where the probe's verdict is kept between starts, and what it depends on besides the threads (the state identity). */
  probeStore?: {dir: string; key: unknown} | null;
  /** Where builds from source are kept between installs (engine-build-store.ts); null: not kept. */
  buildStore?: string | null;
  logger: Logger;
  /** A Llama the caller owns (a side model's engine runs on the main engine's): used instead of getLlama, never disposed here. */
  llama?: Llama;
  /** A loaded model the caller owns (shared by several side models): used instead of loading modelPath, never disposed here. */
  model?: LlamaModel;
}

export class LlamaEngine implements Engine {
  readonly info: EngineInfo;
  private readonly queue: RegionQueue;
  private readonly eog: Set<number>;
  private readonly vocabTexts: readonly string[];
  private readonly vocabKind: VocabKind;
  private readonly pool: RegionPool;
  private readonly disk: DiskStore | null;
  private readonly grammars: GrammarStore;
  /** Token classes for the constraints under a grammar (whitespace runs, closing when the budget runs out). */
  private readonly tokenClasses: TokenClasses;
  private closed = false;
  private readonly logger: Logger;
  private readonly binder: GrammarBinder;
  /** Speculation for eligible runs; null when it is off (by setting, or because flash attention is). */
  private readonly drafts: DraftPolicy | null;

  private constructor(
    /** The one Llama of the process: side models load their files through it. */
    readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly sequences: LlamaContextSequence[],
    private readonly policy: BatchPolicyState,
    opts: LlamaEngineOptions,
    threads: {prompt: number; decode: number},
    /** What close() disposes: only what load() created itself. */
    private readonly owns: {llama: boolean; model: boolean},
    speculation: SpeculationInfo,
    reuseMatch: EngineInfo["reuseMatch"],
  ) {
    this.drafts = speculation.active
      ? {mode: speculation.mode as DraftPolicy["mode"], stepCost: speculation.stepCost ?? 1, record: new LookupRecord(),
        othersGenerating: () => this.policy.generating.size > 1}
      : null;
    this.queue = new RegionQueue(sequences.length);
    this.disk = opts.disk ?? null;
    this.logger = opts.logger;
    this.grammars = new GrammarStore(llama);
    const meta = model.fileInfo.metadata;
    const tokenizer = meta.tokenizer.ggml as unknown as {model?: string; tokens: string[]};
    this.vocabTexts = tokenizer.tokens;
    this.vocabKind = tokenizer.model === "gpt2" ? "gpt2" : tokenizer.model === "llama" ? "llama" : "other";
    this.eog = new Set<number>();
    for (let t = 0; t < this.vocabTexts.length; t++) if (isEndOfGeneration(model, t)) this.eog.add(t);
    const decoder = new TextDecoder();
    this.binder = {
      constraint: async (grammar, budget) => new GrammarConstraint(model, await this.grammars.get(grammar.gbnf, grammar.key), this.tokenClasses, budget),
      accept: (constraint, token) => acceptGrammarToken(llama, constraint.state, token),
      none: new TokenBias(model.tokenizer),
    };
    this.tokenClasses = classifyTokens(this.vocabTexts.length, (t) => decoder.decode(this.tokenBytes(t)), (t) => model.isSpecialToken(t as Token));
    const release = llama.llamaCppRelease;
    this.info = {
      version: `node-llama-cpp ${PINNED_NODE_LLAMA_CPP} (llama.cpp ${release.release}, ${llama.buildType === "localBuild" ? "built from source" : "prebuilt"})`,
      ...modelFacts(model, this.vocabTexts.length, this.eog),
      modelPath: opts.modelPath,
      contextSize: context.contextSize,
      regions: sequences.length,
      promptPiece: opts.promptPiece,
      threads: threads.prompt,
      decodeThreads: threads.decode,
      flashAttention: opts.flashAttention,
      speculation,
      reuseMatch,
    };
    this.pool = new RegionPool(sequences, this.queue, {piece: opts.promptPiece, match: reuseMatch.match, cacheOn: opts.promptCache,
      positionsPerRegion: context.contextSize,
      bytesPerPosition: Math.round(context.stateSize / Math.max(1, sequences.length * context.contextSize)), disk: this.disk, logger: opts.logger});
  }

  static async load(opts: LlamaEngineOptions): Promise<LlamaEngine> {
    const threads = opts.threads ?? availableParallelism();
    const fromSource = opts.llama === undefined && opts.engineBuild === "openmp" && opts.buildStore;
    if (fromSource) {
      const restored = await restoreBuilds(opts.buildStore!);
      if (restored.length > 0) opts.logger.info("engine build restored from the models directory", {builds: restored.join(",")});
    }
    const llama = opts.llama ?? await getLlama({
      gpu: false,
      ...llamaBuildOptions(opts.engineBuild ?? "prebuilt"),
      // 0 bypasses node-llama-cpp's thread splitter: with it, four regions dispatching small prompt pieces
      // stalled for good on 2 cores (the allocation waited for a free thread that was never announced);
      // there is one context, so the context's own thread count is all that is needed.
      maxThreads: 0,
      logLevel: LlamaLogLevel.error,
      logger: (level, message) => {
        if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) opts.logger.error("engine", {message: message.trim()});
      },
    });
    if (fromSource) {
      const kept = await keepBuilds(opts.buildStore!).catch((err: Error) => {
        opts.logger.warn("could not keep the engine build in the models directory; the next npm ci will build it again", {message: err.message});
        return [];
      });
      if (kept.length > 0) opts.logger.info("engine build kept in the models directory (survives npm ci)", {builds: kept.join(",")});
    }
    const model = opts.model ?? await llama.loadModel({modelPath: opts.modelPath, useMmap: true, defaultContextFlashAttention: opts.flashAttention});
    const contextSize = contextPositions({positions: opts.contextSize, pastTraining: opts.pastTraining ?? "clamp"}, model.trainContextSize);
    const dispatcher = new Dispatcher(threads);
    let engine: LlamaEngine | undefined;
    const context = await model.createContext({
      sequences: opts.regions,
      contextSize,
      // Room for the longest piece a plan makes (planByRows: up to piece + TILED_ROWS - 1 rows), merged tiled pieces
      // and the probe's: an evaluation longer than the batch would be split, and its last part could be a row piece.
      batchSize: Math.max(opts.promptPiece + TILED_ROWS - 1, MERGED_TILED_ROWS, opts.regions),
      threads: {ideal: threads, min: 1},
      // Pinned, not "auto": state files and exact greedy output depend on it (see state-identity.ts).
      flashAttention: opts.flashAttention,
      failedCreationRemedy: false,
      batching: {
        dispatchSchedule: "nextCycle",
        itemPrioritizationStrategy: ({items}) => dispatcher.prioritize(items),
      },
    });
    const sequences: LlamaContextSequence[] = [];
    for (let i = 0; i < opts.regions; i++) sequences.push(context.getSequence());
    dispatcher.attach(context, sequences);
    // Regions must be sequence ids 0..N-1 in order, or "lowest free region" would not mean "lowest id".
    sequences.forEach((s, i) => {
      if (sequenceIdOf(s) !== i) throw new Error(`region ${i} got sequence id ${sequenceIdOf(s)}`);
    });
    if (typeof opts.decodeThreads === "number") dispatcher.decodeThreads = opts.decodeThreads;
    else if (opts.decodeThreads === "auto" && threads > 1) {
      const choice = await measureDecodeThreads(sequences[0]!, model.tokenize(STEP_COST_TEXT) as number[], [1, threads],
        (n) => (dispatcher.decodeThreads = n));
      dispatcher.decodeThreads = choice.decode;
      opts.logger.info("decode threads", {chosen: choice.decode, step_ms: msByThreads(choice.measuredMs)});
      dispatcher.tune((change) => {
        if (engine) engine.info.decodeThreads = change.to;
        opts.logger.info("decode threads changed while serving", {from: change.from, to: change.to, rows: change.rows,
          dispatch_ms: msByThreads(change.ms)});
      });
    }
    const speculation = await speculationAtLoad(opts, model, sequences[0]!);
    const reuseMatch = await reuseMatchAtLoad(opts, model, sequences[0]!, {prompt: threads, decode: dispatcher.decodeThreads},
      mergedRowsFor(context.contextSize));
    engine = new LlamaEngine(llama, model, context, sequences, dispatcher.policy, opts, {prompt: threads, decode: dispatcher.decodeThreads},
      {llama: opts.llama === undefined, model: opts.model === undefined}, speculation, reuseMatch);
    return engine;
  }

  tokenize(text: string, opts: {special: boolean}): number[] {
    return this.model.tokenize(text, opts.special) as number[];
  }

  detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string {
    return this.model.detokenize(tokens as never, opts.special, opts.context as never);
  }

  tokenBytes(token: number): Uint8Array {
    const text = this.vocabTexts[token] ?? "";
    return tokenTextToBytes(text, this.vocabKind, this.model.isSpecialToken(token as never));
  }

  async prepareGrammar(grammar: {gbnf: string; key: string}): Promise<void> {
    await this.grammars.get(grammar.gbnf, grammar.key);
  }

  isValidToken(token: number): boolean {
    return Number.isInteger(token) && token >= 0 && token < this.vocabTexts.length;
  }

  planCuts(length: number, marks: {boundaries: readonly number[]; replySpans: readonly Span[]}): CutPlan {
    return this.pool.planCuts(length, marks);
  }

  async acquire(opts: {signal: AbortSignal; timeoutMs: number; prompt: readonly number[]; plan: CutPlan; resume?: ResumeState | null}): Promise<RegionLease> {
    const waitStart = performance.now();
    let id: number;
    try {
      id = await this.queue.acquire({signal: opts.signal, timeoutMs: opts.timeoutMs,
        choose: (free) => this.pool.chooseTarget(free, opts.prompt, opts.plan)});
    } finally {
      this.pool.stats.waitingS += (performance.now() - waitStart) / 1000;
    }
    const prepareStart = performance.now();
    try {
      await this.pool.shared.claim(id, opts.prompt, opts.plan, opts.signal);
      if (opts.signal.aborted) throw new EngineCancelledError("the client closed the connection while the request waited for a shared prefix");
      const start = await this.pool.prepare(id, opts.prompt, opts.plan, opts.resume ?? null);
      return this.lease(id, start, {queueMs: prepareStart - waitStart, prepareMs: performance.now() - prepareStart, batchWaitMs: 0, engineMs: 0});
    } catch (err) {
      this.pool.shared.release(id);
      this.queue.release(id);
      throw err;
    }
  }

  private lease(id: number, start: RegionLease["start"], phases: EnginePhases): RegionLease {
    const region = this.pool.regions[id]!;
    const stats: DecodeStats = {promptTokens: 0, cachedTokens: 0, promptMs: 0, predictedTokens: 0, predictedMs: 0, draftTokens: 0, draftAccepted: 0, phases};
    const policy = this.policy;
    const mergedRows = mergedRowsFor(this.context.contextSize);
    let released: Promise<void> | null = null;
    /** Set when a decode ran to its end (not cancelled, not failed): only then is the reply sealed or kept. */
    let finished: {promptLength: number} | null = null;
    /** Set when a decode was cancelled and stopped cleanly: matched by rows, what it decoded is still exact. */
    let stopped: {promptLength: number} | null = null;
    const pool = this.pool;
    const decode = (job: DecodeJob): DecodeRun => {
      const run = runOnRegion(region.seq, job, stats, {
        set: (generating) => (generating ? this.policy.generating.add(id) : this.policy.generating.delete(id)),
      }, region.memory, this.binder, {
        reused: start.reused,
        longPrefillTokens: LONG_PREFILL_TOKENS,
        longPrefill: (running) => (pool.stats.prefillSince = running ? performance.now() : null),
        drafts: this.drafts && speculates(job) ? this.drafts : null,
        beforeDecode: () => pool.beforeDecode(),
        mergeRows: () => ([...policy.generating].some((other) => other !== id) ? 0 : mergedRows),
      });
      return (async function* (): DecodeRun {
        // Time in the engine (each step's await) and in its batch queue, as against time with the consumer.
        const batchWaitBase = policy.batchWaitMs[id] ?? 0;
        let innerDone = false;
        let generating = false;
        try {
          for (;;) {
            const t0 = performance.now();
            const r = await run.next();
            // From the second token on: the first token's wait is the prompt's (promptMs).
            if (generating) phases.engineMs += performance.now() - t0;
            if (!r.done && r.value.kind === "token") generating = true;
            phases.batchWaitMs = (policy.batchWaitMs[id] ?? 0) - batchWaitBase;
            if (r.done) {
              innerDone = true;
              if (r.value.reason !== "cancelled" && !job.signal.aborted) finished = {promptLength: job.prompt.length};
              else stopped = {promptLength: job.prompt.length};
              return r.value;
            }
            yield r.value;
          }
        } finally {
          // A consumer that stops early (return()) must still run the region's own cleanup.
          if (!innerDone) stopped = await run.return({reason: "cancelled"}).then(() => ({promptLength: job.prompt.length}));
        }
      })();
    };
    return {
      regionId: id,
      stats,
      start,
      decode,
      release: (opts?: ReleaseOptions) => {
        if (released) return released;
        pool.shared.release(id);
        region.memory.lastUsed = performance.now();
        const done = finished;
        if (!done && stopped && this.info.reuseMatch.match === "rows" && exactLength(region.memory) === stopped.promptLength) {
          // A reply the client stopped: its decoded rows are exact as they stand (a chat UI's "continue" reuses them).
          return (released = this.pool.seal(id, stopped.promptLength, [], {}, () => this.queue.release(id)));
        }
        if (!done || exactLength(region.memory) !== done.promptLength) {
          // Nothing to seal (cancelled, failed or cut short in the prompt); a session cannot keep a half state.
          this.queue.release(id);
          released = Promise.resolve();
          return released;
        }
        const generated = region.memory.tokens.slice(done.promptLength);
        released = this.pool.seal(id, done.promptLength, generated, opts ?? {}, () => this.queue.release(id));
        return released;
      },
    };
  }

  status(): EngineStatus {
    return {
      up: !this.closed,
      regions: this.pool.regions.map((r) => ({
        id: r.id,
        state: this.queue.isBusy(r.id) ? ("busy" as const) : exactLength(r.memory) > 0 ? ("held" as const) : ("free" as const),
        n_ctx: this.info.contextSize,
        n_past: r.seq.nextTokenIndex,
      })),
      queued: this.queue.queued,
      longestWaitS: this.queue.longestWaitS(),
      stepWaitsTimedOut: this.policy.waitsTimedOut,
    };
  }

  cacheReport(): CacheReport {
    return this.pool.report(this.disk?.report() ?? NO_DISK);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.disk?.enabled) {
      const written = await this.pool.flush().catch((err: Error) => {
        this.logger.warn("writing held conversations to the disk tier at shutdown failed", {error: err.message});
        return 0;
      });
      this.logger.info("held conversations written to the disk tier", {states: written});
    }
    await this.context.dispose();
    if (this.owns.model) await this.model.dispose();
    if (this.owns.llama) await this.llama.dispose();
  }
}

/**
 * Greedy, unconstrained, unpenalised and without log probabilities: the runs whose drafts the library verifies
 * exactly. (A penalty's token window, and a grammar's state, would be stale for the draft row.)
 */
function speculates(job: DecodeJob): boolean {
  const s = job.sampling;
  return s.temperature === 0 && !job.grammar && !job.steering && !job.logprobs &&
    s.repeatPenalty === 1 && s.presencePenalty === 0 && s.frequencyPenalty === 0;
}

const NO_DISK: DiskReport = {enabled: false, dir: null, bytes: 0, budget_bytes: 0, entries: 0, hits: 0, writes: 0, rejected: 0, cut_back: 0,
  disabled_reason: "SVC_CACHE_DIR is not set"};

/** "1:24.46,2:62.00": times by thread count, for the log. */
function msByThreads(ms: Record<number, number>): string {
  return Object.entries(ms).map(([n, t]) => `${n}:${t.toFixed(2)}`).join(",");
}
