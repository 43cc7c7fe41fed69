// What the pipeline may ask of the engine: tokens in, tokens out, on a leased region. The engine never
// sees messages, JSON bodies or HTTP.

import type {SamplingParams} from "../core/generation.ts";
import type {EngineMedia, PromptMedia} from "../core/media.ts";
import type {RopeScaling} from "./context-plan.ts";
import type {CacheReport, EnginePhases, RouteReason} from "../core/engine-report.ts";
import type {CutPlan} from "./kv/region-memory.ts";
import type {Span} from "./kv/row-classes.ts";

export type {EnginePhases, RouteReason};

/** Under a grammar, at most this many whitespace-only tokens may follow one another (the spec's bound); the
 * schema grammars guarantee it by allowing at most two whitespace characters between two JSON tokens. */
export const MAX_WHITESPACE_TOKENS_IN_A_ROW = 2;

export interface EngineInfo {
  /** Front-end-independent engine identity, e.g. "node-llama-cpp 3.22.1 (llama.cpp v0.5.0)". */
  version: string;
  architecture: string;
  /** general.name from the GGUF; null when the file has none. Chat-template family detection reads it. */
  modelName: string | null;
  modelPath: string;
  /** Positions per region, as the context really allocated them (may pass the training length: context-plan.ts). */
  contextSize: number;
  trainContextSize: number;
  /** The RoPE scaling llama.cpp applies (the GGUF's; see context-plan.ts). */
  ropeScaling: RopeScaling;
  regions: number;
  promptPiece: number;
  threads: number;
  /** Threads for batches of decode steps (prompt pieces use `threads`). */
  decodeThreads: number;
  flashAttention: boolean;
  speculation: SpeculationInfo;
  /** How reused KV is matched to a cold evaluation: by row class or by piece cuts (kv/region-memory.ts), and why. */
  reuseMatch: {match: CutPlan["match"]; reason: string};
  vocabSize: number;
  bosToken: number | null;
  eosToken: number | null;
  /** Whether a BOS must be prepended to a rendered prompt that does not start with it. */
  prependBos: boolean;
  /** Every token id that ends a reply (end-of-generation tokens of the vocabulary). */
  eogTokenIds: number[];
  bosText: string;
  eosText: string;
  chatTemplate: string | null;
  /** Remote replicas (SVC_ENGINE); absent for the in-process engine. */
  remote?: RemoteEngineInfo;
}

export interface RemoteEngineInfo {
  kind: "llama-server";
  routing: "prefix" | "round-robin";
  replicas: {url: string; slots: number; build: string | null}[];
  /** What cannot hold across replicas, said rather than faked. */
  limits: string[];
}

/** Prompt-lookup speculation as the engine runs it. */
export interface SpeculationInfo {
  mode: "auto" | "on" | "off";
  /** Whether eligible greedy runs get a drafter (auto decides per step whether to send a draft). */
  active: boolean;
  /** A 2-token decode step's cost over a 1-token step's, measured at load; null when not measured. */
  stepCost: number | null;
  /** Why it is not active. */
  reason: string | null;
}

/** Filled in by a decode as it runs; read by the pipeline for timings and usage. */
export interface DecodeStats {
  promptTokens: number;
  /** Prompt tokens taken from the region's existing state instead of evaluated. */
  cachedTokens: number;
  promptMs: number;
  predictedTokens: number;
  predictedMs: number;
  /** Prompt-lookup draft tokens evaluated (verified or refuted), and those verified. */
  draftTokens: number;
  draftAccepted: number;
  /** Where the request's time went inside the engine, when the engine measures it (see EnginePhases). */
  phases?: EnginePhases;
  /** Which remote replica served the request and why (remote engine only). */
  route?: RouteDecision;
}

/** A remote engine's routing decision for one request. */
export interface RouteDecision {
  replica: string;
  /** Prompt tokens the replica was expected to hold (its prefix record); the replica's own count is cachedTokens. */
  expectedCached: number;
  reason: RouteReason;
}

/** The model's own log probability of a generated token, and of the most likely alternatives. */
export interface TokenScore {
  logprob: number;
  /** Most likely first; empty when no alternatives were asked for. */
  top: {token: number; logprob: number}[];
}

export interface GrammarRef {
  /** GBNF text, root rule "root". */
  gbnf: string;
  /** Identifies the grammar for caching. */
  key: string;
}

/**
 * The pipeline's say, token by token, over which grammar binds the next step: a reply can start free
 * and be bound later (JSON after a reasoning block or a preamble, a strict tool call once it opens), and
 * one grammar can hand over to the next at a boundary (one tool parameter at a time).
 */
export interface DecodeSteering {
  /** Called with each sampled token before it is yielded; null leaves everything as it is. */
  onToken(token: number): SteerAction | null;
  /**
   * Called when a stop token is sampled, before the reply ends there: null lets it end; an action with `replaceWith`
   * continues the reply instead (the stop token is dropped, as a replaced token is).
   */
  onStop?(token: number): SteerAction | null;
}

export interface SteerAction {
  /** The sampled token is dropped and these tokens take its place: evaluated, yielded and counted as generated. */
  replaceWith?: number[];
  /** From the next step on: this grammar with a fresh state (null: free text). `accept` tokens (the last ones
   * yielded) are fed into the fresh state first, e.g. the `{` a JSON value started with. */
  bind?: {grammar: GrammarRef | null; accept?: number[]};
}

export interface DecodeJob {
  prompt: number[];
  /** Where the prompt's evaluation pieces end and how reuse is matched (see kv/region-memory.ts); the plan the region was acquired with. */
  plan: CutPlan;
  sampling: SamplingParams;
  /** Score every generated token against the raw distribution, with `top` alternatives (0 to 20). */
  logprobs?: {top: number};
  /** Constrain tokens to this grammar from the first one (steering may change it later). */
  grammar?: GrammarRef;
  /** Grammar changes during the reply; not together with logprobs. */
  steering?: DecodeSteering;
  /** Already fitted to the region: prompt.length + maxTokens <= contextSize. */
  maxTokens: number;
  stopTokenIds: ReadonlySet<number>;
  signal: AbortSignal;
  /** The pictures whose ids the prompt holds (core/media.ts), by id; only for an engine with `media`. */
  media?: ReadonlyMap<number, PromptMedia>;
}

export type DecodeEnd = {reason: "stop_token"; token: number} | {reason: "length"} | {reason: "cancelled"};

/** Prompt progress (first at the cached count, last at the full prompt) and generated tokens (never the stop token). */
export type DecodeItem = {kind: "progress"; processed: number; elapsedMs: number} | {kind: "token"; token: number; score?: TokenScore};

/** Its return value says why it ended. */
export type DecodeRun = AsyncGenerator<DecodeItem, DecodeEnd, void>;

/** How a request started: what it reused and, when it reused less than it could have, why. */
export interface StartInfo {
  reused: number;
  /** memory: the region itself; copy: another region's state copied in; disk / handle: a state file loaded. */
  source: "none" | "memory" | "copy" | "disk" | "handle";
  /** e.g. "diverged@812", "region_busy", "cache_off"; null when everything held was reused. */
  miss: string | null;
}

/** A kept state's tokens and exact cuts, and how to write it: the session layer stores it under a name. */
export type KeepHook = (meta: {tokens: number[]; cuts: number[]; replyStart: number}, write: (path: string) => Promise<void>) => Promise<void>;

/** A state file a request may start from (a session handle's kept state). */
export interface ResumeState {
  tokens: readonly number[];
  cuts: readonly number[];
  path: string;
  /** Checks the file right before it is loaded (size and checksum); false = do not load it. */
  verify(): Promise<boolean>;
}

export interface RegionLease {
  readonly regionId: number;
  readonly stats: DecodeStats;
  readonly start: StartInfo;
  decode(job: DecodeJob): DecodeRun;
  /**
   * Frees the region. Idempotent; called on finish, error and hang-up. After a finished reply the region
   * re-evaluates the reply in pieces so the next turn can reuse it exactly; with `keep`, the resulting state
   * is handed to the hook before anyone else may use the region (the returned promise settles then).
   * `replyBoundaries`: absolute positions inside the reply where the next prompt, which sends the reply
   * back as a message, will cut (where its reasoning, text and calls start and end); the seal cuts there
   * too, so that prompt resumes past them.
   */
  release(opts?: ReleaseOptions): Promise<void>;
}

export interface ReleaseOptions {
  keep?: KeepHook;
  replyBoundaries?: readonly number[];
}

export interface RegionState {
  id: number;
  state: "free" | "busy" | "held";
  n_ctx: number;
  /** Tokens held in the region's KV. */
  n_past: number;
}

export interface EngineStatus {
  up: boolean;
  regions: RegionState[];
  queued: number;
  longestWaitS: number;
  /** Step batches sent without a generating region that did not queue its step in time (should stay near 0). */
  stepWaitsTimedOut: number;
  /** Remote replicas' health and load (remote engine only). */
  replicas?: ReplicaStatus[];
}

export interface ReplicaStatus {
  url: string;
  up: boolean;
  slots: number;
  busy: number;
  /** Token ids in the replica's prefix record. */
  prefix_tokens: number;
}

export interface Engine {
  readonly info: EngineInfo;
  /** Present when the engine reads pictures (llama-server replicas with a projector); absent: text only. */
  readonly media?: EngineMedia;
  tokenize(text: string, opts: {special: boolean}): number[];
  detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string;
  /** Prepares a grammar for later jobs (compiles it in the engine, cached by key); throws if the engine refuses it. */
  prepareGrammar(grammar: GrammarRef): Promise<void>;
  /** The exact bytes a token stands for (byte-level BPE and SentencePiece byte tokens decoded). */
  tokenBytes(token: number): Uint8Array;
  isValidToken(token: number): boolean;
  /**
   * Waits in FIFO order for a region (the lowest idle id). Rejects with EngineBusyError after timeoutMs,
   * EngineCancelledError when signal aborts. The region is prepared to start from whatever holds the longest exact prefix of the
   * prompt under its cut plan: the region itself, another idle region, a disk-tier state or `resume`.
   */
  acquire(opts: {signal: AbortSignal; timeoutMs: number; prompt: readonly number[]; plan: CutPlan; resume?: ResumeState | null}): Promise<RegionLease>;
  /**
   * The cold evaluation plan of a prompt: `boundaries` are where client texts start and end, `replySpans` where
   * earlier replies' texts lie (evaluated as decoded rows were when reuse is matched by rows).
   */
  planCuts(length: number, marks: {boundaries: readonly number[]; replySpans: readonly Span[]}): CutPlan;
  status(): EngineStatus;
  /** The prompt cache's numbers; never waits on the engine. */
  cacheReport(): CacheReport;
  close(): Promise<void>;
}
