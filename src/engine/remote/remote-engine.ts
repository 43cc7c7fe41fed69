// The remote engine (SVC_ENGINE): the Engine interface over llama-server replicas. Every replica slot is a
// region; a request leases one through the same FIFO queue the in-process engine uses, on the replica the
// router picks (router.ts), and decodes there at token level (remote-decode.ts). Tokenizing is local
// (local-vocabulary.ts); the pipeline, templates and grammars above are unchanged.

import type {Logger} from "../../observability/log.ts";
import type {DecodeStats, Engine, EngineInfo, EngineStatus, GrammarRef, RegionLease, ResumeState, RouteDecision} from "../engine.ts";
import {EngineBusyError} from "../errors.ts";
import {classifyTokens, type TokenClasses} from "../json-closing.ts";
import type {CacheReport, ReplicaCacheReport} from "../../core/engine-report.ts";
import {isMediaToken, type PromptMedia} from "../../core/media.ts";
import type {CutPlan} from "../kv/region-memory.ts";
import {GrammarStore} from "../llama/grammar-constraint.ts";
import {modelFacts} from "../llama/model-facts.ts";
import {RegionQueue} from "../region-queue.ts";
import {replicaApi, type ReplicaUnreachableError} from "./llama-server-api.ts";
import {LocalVocabulary} from "./local-vocabulary.ts";
import {PrefixTree} from "./prefix-tree.ts";
import {RemoteCloser} from "./remote-closing.ts";
import {RemoteLease, resumeOnSlot, routedStart, type LeaseRequest, type SessionPin, type SlotHost} from "./remote-lease.ts";
import {readDescriptor} from "./remote-sessions.ts";
import {checkSameModel, inspectReplica, type ReplicaIdentity} from "./remote-identity.ts";
import {promptField, RemoteMedia} from "./remote-media.ts";
import {emptyCacheReport, replicaReport, type ReplicaCounts} from "./remote-report.ts";
import {chooseReplica, chooseSlot, type RoutingMode} from "./router.ts";
import {TokenByteIndex} from "./token-gaps.ts";

export interface RemoteEngineOptions {
  urls: readonly string[];
  /** The GGUF the replicas serve, for its vocabulary (no weights are loaded). */
  modelPath: string;
  routing: RoutingMode;
  promptPiece: number;
  /** Token ids each replica's prefix record keeps (least recently used dropped first). */
  prefixRecordTokens?: number;
  healthIntervalMs?: number;
  logger: Logger;
}

interface Replica {
  id: ReplicaIdentity;
  up: boolean;
  /** Region ids of its slots: firstRegion .. firstRegion + slots - 1. */
  firstRegion: number;
  tree: PrefixTree;
  counts: ReplicaCounts;
  /** Slots taken out of the queue while the replica is down, given back when it answers again. */
  parked: Set<number>;
  /** Whether it saves slot files (--slot-save-path), for named sessions; null until a save was tried. */
  savesSlots: boolean | null;
}

interface Slot {
  replica: number;
  index: number;
  held: readonly number[];
  lastUsed: number;
}

const DEFAULT_PREFIX_RECORD = 1 << 20;
const HEALTH_TIMEOUT_MS = 2_000;

export class RemoteEngine implements Engine, SlotHost {
  readonly info: EngineInfo;
  /** When every replica reads pictures (run with --mmproj). */
  readonly media?: RemoteMedia;
  private readonly queue: RegionQueue;
  private readonly slots: Slot[] = [];
  private readonly replicas: Replica[];
  private readonly grammars: GrammarStore;
  private readonly bytes: TokenByteIndex;
  private rotate = 0;
  private useClock = 0;
  private closed = false;
  private readonly poll: NodeJS.Timeout;

  private constructor(readonly vocabulary: LocalVocabulary, identities: ReplicaIdentity[], private readonly opts: RemoteEngineOptions) {
    this.replicas = identities.map((id) => ({id, up: true, firstRegion: 0, tree: new PrefixTree(opts.prefixRecordTokens ?? DEFAULT_PREFIX_RECORD),
      counts: {requests: 0, hits: 0, promptTokens: 0, cachedTokens: 0, expectedCached: 0,
        routed: {prefix: 0, overloaded: 0, least_loaded: 0, round_robin: 0, waited: 0, failover: 0, session: 0}}, parked: new Set(), savesSlots: null}));
    for (const [r, replica] of this.replicas.entries()) {
      replica.firstRegion = this.slots.length;
      for (let i = 0; i < replica.id.slots; i++) this.slots.push({replica: r, index: i, held: [], lastUsed: 0});
    }
    this.queue = new RegionQueue(this.slots.length);
    this.grammars = new GrammarStore(vocabulary.llama);
    this.bytes = new TokenByteIndex(vocabulary.size, (t) => vocabulary.tokenBytes(t), (t) => vocabulary.model.isSpecialToken(t as never));
    this.info = {
      version: `llama-server replicas (${identities.map((i) => i.build ?? "unknown build").filter((b, i, all) => all.indexOf(b) === i).join(", ")})`,
      ...modelFacts(vocabulary.model, vocabulary.size, vocabulary.eog),
      modelPath: opts.modelPath,
      contextSize: Math.min(...identities.map((i) => i.contextSize)),
      regions: this.slots.length,
      promptPiece: opts.promptPiece,
      threads: 0,
      decodeThreads: 0,
      flashAttention: false,
      speculation: {mode: "off", active: false, stepCost: null, reason: "decoding runs on remote replicas"},
      reuseMatch: {match: "prefix",
        reason: "each replica keeps its own prompt cache (llama-server's), reused up to the first differing token; " +
          "svc routes prompts to the replica that holds them"},
      remote: {kind: "llama-server", routing: opts.routing, replicas: identities.map((i) => ({url: i.url, slots: i.slots, build: i.build})),
        limits: [
          "greedy output is not promised byte-identical across replicas or with the in-process engine (llama-server batches and caches on its own)",
          "a grammar change inside a reply (reasoning then JSON, one tool parameter after another) ends the remote request and continues it in a new one",
          "under a schema, JSON is closed as the token budget ends by decoding its last tokens one per request " +
            "(svc picks among the replica's candidates), which is slower than streaming them",
          "logprobs are missing for tokens llama-server held back inside a UTF-8 character",
          "a named session (SVC_FORK) lives on the replica that served it: requests from it go there while it has a free slot; " +
            "its state outlasts the slot's reuse only where the replica runs with --slot-save-path, " +
            "and svc does not delete the slot files it writes there",
        ]},
    };
    if (identities.every((i) => i.modalities.vision && i.mediaMarker !== null)) {
      this.media = new RemoteMedia(true, identities.every((i) => i.modalities.audio),
        () => this.replicas.map((r) => ({url: r.id.url, up: r.up, mediaMarker: r.id.mediaMarker})));
      this.info.remote!.limits.push("a request with a picture is sent as text (llama-server reads pictures only in a text prompt), " +
        "so client text that spells a control token is refused on it");
    }
    this.poll = setInterval(() => void this.checkHealth(), opts.healthIntervalMs ?? 2_000);
    this.poll.unref();
  }

  static async load(opts: RemoteEngineOptions): Promise<RemoteEngine> {
    const vocab = await LocalVocabulary.load(opts.modelPath, opts.logger);
    try {
      const local = {vocabSize: vocab.size, tokenize: (text: string) => vocab.tokenize(text, true)};
      const identities = await Promise.all(opts.urls.map((url) => inspectReplica(url, local)));
      checkSameModel(identities);
      for (const i of identities) opts.logger.info("engine replica", {url: i.url, slots: i.slots, n_ctx: i.contextSize, build: i.build ?? "unknown"});
      return new RemoteEngine(vocab, identities, opts);
    } catch (err) {
      await vocab.close();
      throw err;
    }
  }

  tokenize(text: string, opts: {special: boolean}): number[] {
    return this.vocabulary.tokenize(text, opts.special);
  }

  detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string {
    // A picture's positions have no text.
    const text = (t: readonly number[] | undefined) => t?.some(isMediaToken) ? t.filter((x) => !isMediaToken(x)) : t;
    return this.vocabulary.detokenize(text(tokens)!, opts.special, text(opts.context));
  }

  tokenBytes(token: number): Uint8Array {
    return this.vocabulary.tokenBytes(token);
  }

  isValidToken(token: number): boolean {
    return Number.isInteger(token) && token >= 0 && token < this.vocabulary.size;
  }

  /** Parsed by the same llama.cpp grammar parser the replicas run, so a grammar they would refuse is refused before the request. */
  async prepareGrammar(grammar: GrammarRef): Promise<void> {
    await this.grammars.get(grammar.gbnf, grammar.key);
  }

  planCuts(length: number): CutPlan {
    return {cuts: [length], match: "prefix"};
  }

  get logger(): Logger {
    return this.opts.logger;
  }

  async acquire(opts: {signal: AbortSignal; timeoutMs: number; prompt: readonly number[]; plan: CutPlan; resume?: ResumeState | null}): Promise<RegionLease> {
    const waitStart = performance.now();
    const pin = opts.resume ? await this.sessionPin(opts.resume) : null;
    const {region, decision} = await this.lease(opts, null, pin?.replica ?? null);
    const prepareStart = performance.now();
    const start = pin ? await resumeOnSlot(this, region, pin, opts.prompt, decision.expectedCached) : routedStart(decision.expectedCached);
    if (pin && start.source !== "none") decision.expectedCached = start.reused;
    const stats: DecodeStats = {promptTokens: opts.prompt.length, cachedTokens: 0, promptMs: 0, predictedTokens: 0, predictedMs: 0, draftTokens: 0,
      draftAccepted: 0, phases: {queueMs: prepareStart - waitStart, prepareMs: performance.now() - prepareStart, batchWaitMs: 0, engineMs: 0}, route: decision};
    return new RemoteLease(this, region, stats, start, opts);
  }

  /** The replica a session's kept state lives on, when its descriptor checks out and the replica is still in SVC_ENGINE. */
  private async sessionPin(resume: ResumeState): Promise<SessionPin | null> {
    if (!(await resume.verify())) return null;
    const descriptor = await readDescriptor(resume.path);
    const replica = descriptor ? this.replicas.findIndex((r) => r.id.url === descriptor.replica) : -1;
    if (!descriptor || replica < 0) {
      this.opts.logger.info("session state names no replica of this server; the request is routed as any other",
        {replica: descriptor?.replica ?? "unreadable"});
      return null;
    }
    return {replica, descriptor, resume};
  }

  /** Waits for a slot, routed; `avoid` is a replica just found dead (failover), `pinned` a named session's replica. */
  async lease(opts: LeaseRequest, avoid: number | null, pinned: number | null): Promise<{region: number; decision: RouteDecision}> {
    let routed: {region: number; decision: RouteDecision} | null = null;
    const region = await this.queue.acquire({signal: opts.signal, timeoutMs: opts.timeoutMs, choose: (free) => {
      routed = this.route(free, opts.prompt, avoid, pinned);
      return routed?.region ?? free[0]!;
    }});
    const replica = this.slots[region]!.replica;
    if (!this.replicas[replica]!.up) {
      // Only dead replicas had a free slot: no replica can serve now.
      this.park(region);
      throw new EngineBusyError("no engine replica is answering; retry later", 5);
    }
    const chosen = routed as {region: number; decision: RouteDecision} | null;
    const decision: RouteDecision = chosen && chosen.region === region
      ? chosen.decision
      : {replica: this.replicas[replica]!.id.url, expectedCached: this.replicas[replica]!.tree.longestPrefix(opts.prompt), reason: "waited"};
    if (avoid !== null) decision.reason = "failover";
    this.replicas[replica]!.counts.routed[decision.reason]++;
    return {region, decision};
  }

  private route(free: number[], prompt: readonly number[], avoid: number | null, pinned: number | null): {region: number; decision: RouteDecision} | null {
    const views = this.replicas.map((r, index) => {
      const own = free.filter((id) => this.slots[id]!.replica === index);
      return {index, up: r.up && index !== avoid, busy: r.id.slots - own.length, free: own, expected: r.up ? r.tree.longestPrefix(prompt, {touch: false}) : 0};
    });
    const route = chooseReplica(views, this.opts.routing, this.rotate++, prompt.length, pinned);
    if (!route) return null;
    const slot = chooseSlot(views[route.replica]!.free.map((id) => ({region: id, held: this.slots[id]!.held, lastUsed: this.slots[id]!.lastUsed})), prompt);
    return {region: slot.region, decision: {replica: this.replicas[route.replica]!.id.url, expectedCached: route.expected, reason: route.reason}};
  }

  replicaOf(region: number): number {
    return this.slots[region]!.replica;
  }

  target(region: number): {url: string; slot: number} {
    const slot = this.slots[region]!;
    return {url: this.replicas[slot.replica]!.id.url, slot: slot.index};
  }

  heldBy(region: number): readonly number[] {
    return this.slots[region]!.held;
  }

  savesSlots(region: number): boolean | null {
    return this.replicas[this.slots[region]!.replica]!.savesSlots;
  }

  noteSlotSaving(region: number, saves: boolean): void {
    this.replicas[this.slots[region]!.replica]!.savesSlots = saves;
  }

  /** What a slot holds after a remote request, for the slot choice and the replica's prefix record (the caller's array, not copied). */
  recordHeld(region: number, tokens: readonly number[]): void {
    const slot = this.slots[region]!;
    slot.held = tokens;
    slot.lastUsed = ++this.useClock;
    const replica = this.replicas[slot.replica]!;
    if (replica.up) replica.tree.insert(tokens);
  }

  recordFinished(region: number, stats: DecodeStats): void {
    const c = this.replicas[this.slots[region]!.replica]!.counts;
    c.requests++;
    if (stats.cachedTokens > 0) c.hits++;
    c.promptTokens += stats.promptTokens;
    c.cachedTokens += stats.cachedTokens;
    c.expectedCached += stats.route?.expectedCached ?? 0;
  }

  /** Takes the replica out at once (not waiting for the next health poll): its prefix record is dropped, its free slots parked. */
  markDown(region: number, err: ReplicaUnreachableError | Error): void {
    const r = this.slots[region]!.replica;
    const replica = this.replicas[r]!;
    if (!replica.up) return;
    replica.up = false;
    replica.tree.clear();
    this.opts.logger.warn("engine replica is down; its requests go to the others", {url: replica.id.url, error: err.message});
    for (let i = 0; i < replica.id.slots; i++) if (this.queue.take(replica.firstRegion + i)) replica.parked.add(replica.firstRegion + i);
  }

  release(region: number): void {
    const replica = this.replicas[this.slots[region]!.replica]!;
    if (replica.up) this.queue.release(region);
    else this.park(region);
  }

  private park(region: number): void {
    this.replicas[this.slots[region]!.replica]!.parked.add(region);
  }

  private async checkHealth(): Promise<void> {
    if (this.closed) return;
    await Promise.all(this.replicas.map(async (replica) => {
      const ok = await replicaApi.healthy(replica.id.url, HEALTH_TIMEOUT_MS);
      if (ok && !replica.up) {
        replica.up = true;
        this.opts.logger.info("engine replica is back", {url: replica.id.url});
        // A restarted llama-server draws a new media marker unless it was pinned.
        if (this.media) {
          const props = await replicaApi.props(replica.id.url).catch(() => null);
          if (props?.media_marker) replica.id = {...replica.id, mediaMarker: props.media_marker};
        }
        // Its slots restarted empty: nothing held.
        for (let i = 0; i < replica.id.slots; i++) this.slots[replica.firstRegion + i]!.held = [];
        const parked = [...replica.parked];
        replica.parked.clear();
        for (const id of parked) this.queue.release(id);
      } else if (!ok && replica.up) {
        this.markDown(replica.firstRegion, new Error("health check failed"));
      }
    }));
  }

  status(): EngineStatus {
    return {
      up: !this.closed && this.replicas.some((r) => r.up),
      regions: this.slots.map((s, id) => ({id, state: this.queue.isBusy(id) && !this.replicas[s.replica]!.parked.has(id) ? "busy" as const
        : s.held.length > 0 ? "held" as const : "free" as const, n_ctx: this.info.contextSize, n_past: s.held.length})),
      queued: this.queue.queued,
      longestWaitS: this.queue.longestWaitS(),
      stepWaitsTimedOut: 0,
      replicas: this.replicas.map((r) => ({url: r.id.url, up: r.up, slots: r.id.slots, busy: this.busySlots(r), prefix_tokens: r.tree.size})),
    };
  }

  private busySlots(r: Replica): number {
    let n = 0;
    for (let i = 0; i < r.id.slots; i++) if (this.queue.isBusy(r.firstRegion + i) && !r.parked.has(r.firstRegion + i)) n++;
    return n;
  }

  cacheReport(): CacheReport {
    const replicas: ReplicaCacheReport[] = this.replicas.map((r) => replicaReport(r.id.url, r.up, r.id.slots, this.busySlots(r), r.tree.size, r.counts));
    return emptyCacheReport(replicas, this.slots.length * this.info.contextSize, this.slots.reduce((n, s) => n + s.held.length, 0));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.poll);
    await this.vocabulary.close();
  }

  decodeDeps(lease: RemoteLease) {
    return {
      bytes: this.bytes,
      tokenBytes: (t: number) => this.vocabulary.tokenBytes(t),
      isSpecial: (t: number) => this.vocabulary.model.isSpecialToken(t as never),
      target: () => this.target(lease.regionId),
      failover: (err: ReplicaUnreachableError) => lease.failover(err),
      lost: (err: ReplicaUnreachableError) => this.markDown(lease.regionId, err),
      held: (tokens: readonly number[]) => this.recordHeld(lease.regionId, tokens),
      prompt: (tokens: readonly number[], media: ReadonlyMap<number, PromptMedia> | undefined) => promptField(tokens, media,
        this.replicas[this.slots[lease.regionId]!.replica]!.id.mediaMarker, this.promptText),
      closer: async (grammar: GrammarRef, budget: number) => new RemoteCloser(this.vocabulary.llama, this.vocabulary.model,
        await this.grammars.get(grammar.gbnf, grammar.key), this.tokenClasses(), this.vocabulary.size, budget),
    };
  }

  private get promptText() {
    return {detokenize: (tokens: readonly number[]) => this.vocabulary.detokenize(tokens, true),
      autoBos: this.info.prependBos ? this.info.bosToken : null};
  }

  private classes: TokenClasses | null = null;

  /** The vocabulary's token classes for closing JSON, computed on the first schema reply that needs them. */
  private tokenClasses(): TokenClasses {
    const decoder = new TextDecoder();
    this.classes ??= classifyTokens(this.vocabulary.size, (t) => decoder.decode(this.vocabulary.tokenBytes(t)),
      (t) => this.vocabulary.model.isSpecialToken(t as never));
    return this.classes;
  }
}
