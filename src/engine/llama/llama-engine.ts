// The node-llama-cpp engine: one model, one context whose sequences are the regions, continuous batching
// across them through our batch policy, CPU only, threads = cores unless set.

import {availableParallelism} from "node:os";
import {getLlama, LlamaLogLevel, TokenBias, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token} from "node-llama-cpp";
import type {Logger} from "../../observability/log.ts";
import type {DecodeJob, DecodeStats, Engine, EngineInfo, EngineStatus, RegionLease} from "../engine.ts";
import {RegionQueue} from "../region-queue.ts";
import {chooseBatch, newBatchPolicyState, type BatchPolicyState} from "./batch-strategy.ts";
import {acceptGrammarToken, PINNED_NODE_LLAMA_CPP, queuedDecodes, sequenceIdOf} from "./internals.ts";
import {classifyTokens, GrammarConstraint, GrammarStore, type TokenClasses} from "./grammar-constraint.ts";
import {runOnRegion, type GrammarBinder} from "./region-decode.ts";
import {bestRegion, emptyMemory, type RegionMemory} from "./region-memory.ts";
import {tokenTextToBytes, type VocabKind} from "./token-bytes.ts";

export interface LlamaEngineOptions {
  modelPath: string;
  regions: number;
  contextSize: number;
  promptPiece: number;
  /** Reuse what a region holds from its last prompt (see region-memory.ts). */
  promptCache: boolean;
  threads?: number;
  logger: Logger;
}

export class LlamaEngine implements Engine {
  readonly info: EngineInfo;
  private readonly queue: RegionQueue;
  private readonly eog: Set<number>;
  private readonly vocabTexts: readonly string[];
  private readonly vocabKind: VocabKind;
  private readonly memories: RegionMemory[];
  private readonly promptCache: boolean;
  private readonly grammars: GrammarStore;
  /** Token classes for the constraints under a grammar (whitespace runs, closing when the budget runs out). */
  private readonly tokenClasses: TokenClasses;
  private closed = false;
  private readonly binder: GrammarBinder;

  private constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly sequences: LlamaContextSequence[],
    private readonly policy: BatchPolicyState,
    opts: LlamaEngineOptions,
    threads: number,
  ) {
    this.queue = new RegionQueue(sequences.length);
    this.memories = sequences.map(() => emptyMemory());
    this.promptCache = opts.promptCache;
    this.grammars = new GrammarStore(llama);
    const meta = model.fileInfo.metadata;
    const tokenizer = meta.tokenizer.ggml as unknown as {model?: string; tokens: string[]};
    this.vocabTexts = tokenizer.tokens;
    this.vocabKind = tokenizer.model === "gpt2" ? "gpt2" : tokenizer.model === "llama" ? "llama" : "other";
    this.eog = new Set<number>();
    for (let t = 0; t < this.vocabTexts.length; t++) if (model.isEogToken(t as Token)) this.eog.add(t);
    const decoder = new TextDecoder();
    this.binder = {
      constraint: async (grammar, budget) => new GrammarConstraint(model, await this.grammars.get(grammar.gbnf, grammar.key), this.tokenClasses, budget),
      accept: (constraint, token) => acceptGrammarToken(llama, constraint.state, token),
      none: new TokenBias(model.tokenizer),
    };
    this.tokenClasses = classifyTokens(this.vocabTexts.length, (t) => decoder.decode(this.tokenBytes(t)), (t) => model.isSpecialToken(t as Token));
    const release = llama.llamaCppRelease;
    this.info = {
      version: `node-llama-cpp ${PINNED_NODE_LLAMA_CPP} (llama.cpp ${release.release})`,
      architecture: String(meta.general.architecture),
      modelPath: opts.modelPath,
      contextSize: context.contextSize,
      trainContextSize: model.trainContextSize,
      regions: sequences.length,
      promptPiece: opts.promptPiece,
      threads,
      vocabSize: this.vocabTexts.length,
      bosToken: model.tokens.bos,
      eosToken: model.tokens.eos,
      prependBos: model.tokens.shouldPrependBosToken,
      eogTokenIds: [...this.eog].sort((a, b) => a - b),
      bosText: model.tokens.bosString ?? "",
      eosText: model.tokens.eosString ?? "",
      chatTemplate: (meta.tokenizer as {chat_template?: string}).chat_template ?? null,
    };
  }

  static async load(opts: LlamaEngineOptions): Promise<LlamaEngine> {
    const threads = opts.threads ?? availableParallelism();
    const llama = await getLlama({
      gpu: false,
      build: "never",
      maxThreads: threads,
      logLevel: LlamaLogLevel.error,
      logger: (level, message) => {
        if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) opts.logger.error("engine", {message: message.trim()});
      },
    });
    const model = await llama.loadModel({modelPath: opts.modelPath, useMmap: true, defaultContextFlashAttention: false});
    const contextSize = Math.min(opts.contextSize, model.trainContextSize);
    const policy = newBatchPolicyState();
    let contextRef: LlamaContext | undefined;
    const context = await model.createContext({
      sequences: opts.regions,
      contextSize,
      batchSize: Math.max(opts.promptPiece, opts.regions),
      threads: {ideal: threads, min: 1},
      // Pinned, not "auto": state files and exact greedy output depend on it.
      flashAttention: false,
      failedCreationRemedy: false,
      batching: {
        dispatchSchedule: "nextCycle",
        itemPrioritizationStrategy: ({items}) => chooseBatch(items, queuedDecodes(contextRef!), policy),
      },
    });
    contextRef = context;
    const sequences: LlamaContextSequence[] = [];
    for (let i = 0; i < opts.regions; i++) sequences.push(context.getSequence());
    // Regions must be sequence ids 0..N-1 in order, or "lowest free region" would not mean "lowest id".
    sequences.forEach((s, i) => {
      if (sequenceIdOf(s) !== i) throw new Error(`region ${i} got sequence id ${sequenceIdOf(s)}`);
    });
    return new LlamaEngine(llama, model, context, sequences, policy, opts, threads);
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

  async acquire(opts: {signal: AbortSignal; timeoutMs: number; prompt?: readonly number[]}): Promise<RegionLease> {
    const {prompt} = opts;
    const choose = prompt && this.promptCache ? (free: number[]) => bestRegion(free, this.memories, prompt, this.info.promptPiece) : undefined;
    const id = await this.queue.acquire({signal: opts.signal, timeoutMs: opts.timeoutMs, choose});
    return this.lease(id);
  }

  private lease(id: number): RegionLease {
    const seq = this.sequences[id]!;
    // With the cache off, the region's memory is forgotten, so nothing is reused.
    if (!this.promptCache) this.memories[id] = emptyMemory();
    const stats: DecodeStats = {promptTokens: 0, cachedTokens: 0, promptMs: 0, predictedTokens: 0, predictedMs: 0};
    let released = false;
    return {
      regionId: id,
      stats,
      decode: (job: DecodeJob) =>
        runOnRegion(seq, job, this.info.promptPiece, stats, {
          set: (generating) => (generating ? this.policy.generating.add(id) : this.policy.generating.delete(id)),
        }, this.memories[id]!, this.binder),
      release: () => {
        if (released) return;
        released = true;
        this.queue.release(id);
      },
    };
  }

  status(): EngineStatus {
    return {
      up: !this.closed,
      regions: this.sequences.map((s, id) => ({
        id,
        state: this.queue.isBusy(id) ? ("busy" as const) : ("free" as const),
        n_ctx: this.info.contextSize,
        n_past: s.nextTokenIndex,
      })),
      queued: this.queue.queued,
      longestWaitS: this.queue.longestWaitS(),
      stepWaitsTimedOut: this.policy.waitsTimedOut,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
