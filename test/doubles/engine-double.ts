// An Engine without a native library, for the in-process test tier: the byte tokenizer of byte-tokenizer.ts,
// region leases through the real RegionQueue (so busy, queue timeout and cancellation behave as the real
// engine's), the real engine's prompt-cache rules, and a reply per request played from a script (script.ts) the
// test gives.
//
// What is honest and what is not:
// - Leases, the queue, budgets (maxTokens), stop tokens, cancellation, steering replacements and the stats
//   the pipeline reads behave as DecodeJob and RegionLease promise.
// - The prompt cache keeps the real engine's rules (kv/region-memory.ts): a region (or a session's kept
//   state) serves the longest prefix that ends at a cut both plans share, leaving one prompt token to
//   evaluate, another idle region's prefix is copied in rather than a held conversation overwritten, and a
//   finished reply is "sealed" in pieces so the next turn can resume after it (at once: the real pool seals
//   an unkept reply once the engine is idle, which a double without cores to share has no reason to wait
//   for). There is no disk tier.
// - Grammars are recorded, never enforced: a script must itself say what a grammar would allow.
// - Log probabilities are fake and fixed: see scoreOf in script.ts.
// - Nothing is computed, so there is no KV: the cache report counts what the double did, with 0 bytes.

import {readFile, writeFile} from "node:fs/promises";
import type {CacheReport, MissReason} from "../../src/core/engine-report.ts";
import {MISS_REASONS} from "../../src/core/engine-report.ts";
import {commonPrefix, exactLength, piecesFrom, planCuts, reusable, type CutPlan} from "../../src/engine/kv/region-memory.ts";
import type {DecodeEnd, DecodeJob, DecodeRun, DecodeStats, Engine, EngineInfo, EngineStatus, GrammarRef, RegionLease, ReleaseOptions, ResumeState,
  StartInfo} from "../../src/engine/engine.ts";
import {RegionQueue} from "../../src/engine/region-queue.ts";
import * as tok from "./byte-tokenizer.ts";
import {pause, playback, scoreOf, type Script} from "./script.ts";

export type {Script, ScriptPlan, ScriptReply, ScriptStep} from "./script.ts";

/** ChatML: system, user, assistant and tool turns, nothing else. */
export const CHATML_TEMPLATE = "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}" +
  "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

export interface EngineDoubleOptions {
  script?: Script;
  /** Positions per region (default 2048, the e2e harness's SVC_CTX_SIZE). */
  contextSize?: number;
  regions?: number;
  promptPiece?: number;
  promptCache?: boolean;
  /** Simulated prompt evaluation: milliseconds per prompt token not reused, slept piece by piece. */
  prefillMsPerToken?: number;
  chatTemplate?: string | null;
}

/** What one decode did, for tests to inspect. */
export interface DecodeRecord {
  regionId: number;
  job: DecodeJob;
  start: StartInfo;
  /** Grammar keys bound during the reply by steering (null: back to free text); never enforced. */
  bound: (string | null)[];
  generated: number[];
  end: DecodeEnd | null;
}

interface Region {
  id: number;
  /** Tokens the region holds: the reused prefix, the evaluated prompt and the generated tokens. */
  tokens: number[];
  /** Piece ends of the exact part (the prompt as evaluated, and a reply once sealed), as kv/region-memory.ts keeps them. */
  cuts: number[];
  lastUsed: number;
  /** Where the sealed reply starts (its prompt length); 0 when none is sealed. */
  replyStart: number;
}

interface Held {
  tokens: readonly number[];
  cuts: readonly number[];
}

const DEFAULT_REPLY = "Hello! How can I help you today?";

export class EngineDouble implements Engine {
  readonly info: EngineInfo;
  /** The script for the next requests; tests may replace it at any time. */
  script: Script;
  /** Every decode so far. */
  readonly decodes: DecodeRecord[] = [];
  /** Keys of the grammars prepared (pipeline.start loads them before taking a region). */
  readonly preparedGrammars: string[] = [];
  /** When set, prepareGrammar throws with this message (an engine that refuses a grammar). */
  rejectGrammar: string | null = null;
  /** Thrown by the next acquire once it has a region (e.g. an EngineMemoryError), then cleared. */
  failNextAcquire: Error | null = null;
  private readonly queue: RegionQueue;
  private readonly regions: Region[];
  private readonly piece: number;
  private readonly promptCache: boolean;
  /** Simulated prompt evaluation (see EngineDoubleOptions); tests may change it at any time. */
  prefillMsPerToken: number;
  private closed = false;
  private readonly counts = {requests: 0, hits: 0, promptTokens: 0, cachedTokens: 0, evicted: 0, dropped: 0, coldResorts: 0, relocated: 0, seals: 0, waitingS: 0, takenAt: Date.now(),
    misses: Object.fromEntries(MISS_REASONS.map((r) => [r, 0])) as Record<MissReason, number>};
  /** Held states that were overwritten (for the "evicted" miss reason). */
  private readonly evicted: Held[] = [];

  constructor(opts: EngineDoubleOptions = {}) {
    this.script = opts.script ?? (() => DEFAULT_REPLY);
    const regions = opts.regions ?? 4;
    this.piece = opts.promptPiece ?? 64;
    this.promptCache = opts.promptCache ?? true;
    this.prefillMsPerToken = opts.prefillMsPerToken ?? 0;
    this.queue = new RegionQueue(regions);
    this.regions = Array.from({length: regions}, (_, id) => ({id, tokens: [], cuts: [], lastUsed: 0, replyStart: 0}));
    const contextSize = opts.contextSize ?? 2048;
    this.info = {
      version: "engine-double 1 (test/doubles/engine-double.ts)",
      architecture: "double",
      modelName: null,
      modelPath: "engine-double",
      contextSize,
      trainContextSize: contextSize,
      ropeScaling: {type: "none", factor: null, originalContextLength: null, freqBase: 10_000},
      regions,
      promptPiece: this.piece,
      threads: 1,
      decodeThreads: 1,
      flashAttention: true,
      speculation: {mode: "off", active: false, stepCost: null, reason: "the engine double does not speculate"},
      reuseMatch: {match: "pieces", reason: "the engine double matches reuse by pieces and seals replies"},
      vocabSize: tok.VOCAB_SIZE,
      bosToken: null,
      eosToken: tok.IM_END,
      prependBos: false,
      eogTokenIds: [tok.ENDOFTEXT, tok.IM_END],
      bosText: "",
      eosText: tok.SPECIAL_TOKENS[tok.IM_END],
      chatTemplate: opts.chatTemplate === undefined ? CHATML_TEMPLATE : opts.chatTemplate,
    };
  }

  tokenize(text: string, opts: {special: boolean}): number[] {
    return tok.tokenize(text, opts);
  }

  detokenize(tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}): string {
    return tok.detokenize(tokens, opts);
  }

  tokenBytes(token: number): Uint8Array {
    return tok.tokenBytes(token);
  }

  isValidToken(token: number): boolean {
    return tok.isValidToken(token);
  }

  async prepareGrammar(grammar: GrammarRef): Promise<void> {
    if (this.rejectGrammar !== null) throw new Error(this.rejectGrammar);
    this.preparedGrammars.push(grammar.key);
  }

  planCuts(length: number, marks: {boundaries: readonly number[]}): CutPlan {
    // The double matches reuse by pieces and seals replies, like the real engine under SVC_EXACT_REUSE=pieces.
    return {cuts: planCuts(length, this.piece, marks.boundaries), match: "pieces"};
  }

  async acquire(opts: {signal: AbortSignal; timeoutMs: number; prompt: readonly number[]; plan: CutPlan; resume?: ResumeState | null}): Promise<RegionLease> {
    if (this.closed) throw new Error("the engine double is closed");
    const waitStart = performance.now();
    let id: number;
    try {
      id = await this.queue.acquire({signal: opts.signal, timeoutMs: opts.timeoutMs, choose: (free) => this.choose(free, opts.prompt, opts.plan)});
    } finally {
      this.counts.waitingS += (performance.now() - waitStart) / 1000;
    }
    try {
      const failure = this.failNextAcquire;
      if (failure) {
        this.failNextAcquire = null;
        throw failure;
      }
      const start = await this.prepare(this.regions[id]!, opts.prompt, opts.plan, opts.resume ?? null);
      return this.lease(this.regions[id]!, start, opts.prompt.length);
    } catch (err) {
      this.queue.release(id);
      throw err;
    }
  }

  status(): EngineStatus {
    return {
      up: !this.closed,
      regions: this.regions.map((r) => ({
        id: r.id,
        state: this.queue.isBusy(r.id) ? ("busy" as const) : exactLength(r) > 0 ? ("held" as const) : ("free" as const),
        n_ctx: this.info.contextSize,
        n_past: r.tokens.length,
      })),
      queued: this.queue.queued,
      longestWaitS: this.queue.longestWaitS(),
      stepWaitsTimedOut: 0,
    };
  }

  cacheReport(): CacheReport {
    const c = this.counts;
    const st = this.status().regions;
    const positions = this.info.regions * this.info.contextSize;
    const used = st.filter((r) => r.state !== "free").reduce((n, r) => n + r.n_past, 0);
    const held = st.filter((r) => r.state === "held").length;
    return {
      enabled: this.promptCache,
      requests: c.requests,
      hits: c.hits,
      misses: c.requests - c.hits,
      hit_rate: ratio(c.hits, c.requests),
      prompt_tokens: c.promptTokens,
      cached_tokens: c.cachedTokens,
      token_hit_rate: ratio(c.cachedTokens, c.promptTokens),
      miss_reasons: {...c.misses},
      entries: held,
      bytes: 0,
      evicted: c.evicted,
      last_message_rewrites: 0,
      tokens_saved: c.cachedTokens,
      pool: {positions, used, usage_ratio: ratio(used, positions), busy_regions: st.filter((r) => r.state === "busy").length, held_regions: held,
        room_clamped: 0, moved: 0, dropped: c.dropped, waiting_for_room: this.queue.queued, waiting_s: Math.round(c.waitingS * 1000) / 1000, relocated: c.relocated,
        // A seal takes no time here: nothing is evaluated.
        cold_resorts: c.coldResorts, seals: c.seals, seal_s: 0, sealing: 0, unsealed: 0, reuse_match: "pieces", prefix_waits: 0, prefix_wait_s: 0},
      disk: {enabled: false, dir: null, bytes: 0, budget_bytes: 0, entries: 0, hits: 0, writes: 0, rejected: 0, cut_back: 0,
        disabled_reason: "the engine double has no disk tier"},
      taken_at: c.takenAt,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /**
   * Among free regions: the one that can serve the longest prefix when that extends its own conversation; else an
   * empty one (prepare copies the prefix in, so a held conversation is not overwritten, as the real pool moves it
   * aside); else the best one, else the least recently used.
   */
  private choose(free: number[], prompt: readonly number[], plan: CutPlan): number {
    const scored = free.map((id) => this.regions[id]!).map((r) => ({r, reuse: this.promptCache ? reusable(r, prompt, plan).length : 0}));
    const best = scored.reduce((a, b) => (b.reuse > a.reuse ? b : a));
    if (best.reuse > 0 && best.reuse >= exactLength(best.r)) return best.r.id;
    const empty = scored.find((x) => exactLength(x.r) === 0);
    if (empty) return empty.r.id;
    if (best.reuse > 0) return best.r.id;
    return scored.reduce((a, b) => (b.r.lastUsed < a.r.lastUsed ? b : a)).r.id;
  }

  /**
   * The region starts from whatever serves the longest prefix: its own state, another idle region's (copied) or a
   * session's kept state; the miss reasons follow kv/placement.ts.
   */
  private async prepare(region: Region, prompt: readonly number[], plan: CutPlan, resume: ResumeState | null): Promise<StartInfo> {
    let held: Held = {tokens: region.tokens, cuts: region.cuts};
    let source: StartInfo["source"] = "memory";
    let u = this.promptCache ? reusable(held, prompt, plan) : {length: 0, common: 0};
    for (const r of this.promptCache ? this.regions : []) {
      if (r === region || this.queue.isBusy(r.id)) continue;
      const v = reusable(r, prompt, plan);
      if (v.length > u.length) [held, source, u] = [{tokens: r.tokens, cuts: r.cuts}, "copy", v];
    }
    if (this.promptCache && resume && reusable(resume, prompt, plan).length > u.length && await resume.verify()) {
      const loaded = await readFile(resume.path, "utf8").then((t) => JSON.parse(t) as {tokens: number[]; cuts: number[]}).catch(() => null);
      if (loaded) {
        [held, source] = [loaded, "handle"];
        u = reusable(held, prompt, plan);
      }
    }
    const reused = u.length;
    if (exactLength(region) > 0 && !(source === "memory" && reused >= exactLength(region))) {
      // A follow-up that repeats the history the held reply answered leaves the rest of its own conversation behind (dropped);
      // anything else overwrites the held conversation (evicted).
      if (source === "memory" && reused > 0 && region.replyStart > 0 && u.common >= region.replyStart) this.counts.dropped++;
      else this.counts.evicted++;
      this.evicted.push({tokens: region.tokens.slice(0, exactLength(region)), cuts: [...region.cuts]});
      if (this.evicted.length > 16) this.evicted.shift();
    }
    let miss: MissReason | null = null;
    let at: number | null = null;
    const best = (states: Held[]) => Math.max(0, ...states.map((h) => reusable(h, prompt, plan).length));
    if (!this.promptCache) miss = "cache_off";
    else if (best(this.regions.filter((r) => r !== region && this.queue.isBusy(r.id))) > reused) miss = "region_busy";
    else if (best(this.evicted) > reused) miss = "evicted";
    else if (reused > 0 && u.common < exactLength(held)) [miss, at] = ["diverged", u.common];
    else if (reused === 0) miss = "cold";
    const c = this.counts;
    c.requests++;
    c.promptTokens += prompt.length;
    c.cachedTokens += reused;
    if (reused > 0) c.hits++;
    if (miss) c.misses[miss]++;
    if (miss === "region_busy" && reused === 0) c.coldResorts++;
    if (reused > 0 && source === "copy") c.relocated++;
    c.takenAt = Date.now();
    region.tokens = held.tokens.slice(0, reused);
    region.cuts = held.cuts.filter((cut) => cut <= reused);
    region.replyStart = 0;
    return {reused, source: reused > 0 ? source : "none", miss: miss === null ? null : at === null ? miss : `${miss}@${at}`};
  }

  private lease(region: Region, start: StartInfo, promptLength: number): RegionLease {
    const stats: DecodeStats = {promptTokens: 0, cachedTokens: 0, promptMs: 0, predictedTokens: 0, predictedMs: 0, draftTokens: 0, draftAccepted: 0};
    let finished = false;
    let released: Promise<void> | null = null;
    return {
      regionId: region.id,
      stats,
      start,
      decode: (job) => this.run(region, job, stats, start, () => (finished = true)),
      release: (opts?: ReleaseOptions) => {
        if (released) return released;
        region.lastUsed = performance.now();
        released = (async () => {
          try {
            // Only a reply that ran to its end is sealed (cut in pieces like the real engine re-evaluates it), and only a sealed one kept.
            if (!finished || exactLength(region) !== promptLength) return;
            const end = region.tokens.length;
            const inside = (opts?.replyBoundaries ?? []).filter((x) => x > promptLength && x < end);
            region.cuts.push(...planCuts(end, this.piece, [promptLength, ...inside]).filter((x) => x > promptLength));
            region.replyStart = promptLength;
            this.counts.seals++;
            if (opts?.keep) {
              const state = {tokens: [...region.tokens], cuts: [...region.cuts]};
              await opts.keep({...state, replyStart: promptLength}, (path) => writeFile(path, JSON.stringify(state)));
            }
          } catch {
            // The session layer reports its own failures; the region is freed all the same.
          } finally {
            this.queue.release(region.id);
          }
        })();
        return released;
      },
    };
  }

  private async *run(region: Region, job: DecodeJob, stats: DecodeStats, start: StartInfo, onFinished: () => void): DecodeRun {
    const started = performance.now();
    if ((job.grammar || job.steering) && job.logprobs) throw new Error("log probabilities under a grammar are not supported (the dialect refuses this)");
    if (job.prompt.length === 0) throw new Error("empty prompt");
    const record: DecodeRecord = {regionId: region.id, job, start, bound: [], generated: [], end: null};
    this.decodes.push(record);
    const {signal} = job;
    stats.promptTokens = job.prompt.length;
    stats.cachedTokens = start.reused;
    yield {kind: "progress", processed: start.reused, elapsedMs: 0};
    const pieces = piecesFrom(job.plan.cuts, start.reused);
    const last = pieces.at(-1)!;
    for (const [a, b] of pieces) {
      if (signal.aborted) return (record.end = {reason: "cancelled"});
      if (this.prefillMsPerToken > 0 && !(await pause((b - a) * this.prefillMsPerToken, signal))) return (record.end = {reason: "cancelled"});
      if (b === last[1]) break;
      region.tokens.push(...job.prompt.slice(a, b));
      region.cuts.push(b);
      yield {kind: "progress", processed: b, elapsedMs: performance.now() - started};
    }
    const reply = this.script({tokens: [...job.prompt], text: tok.detokenize(job.prompt, {special: true})}, job);
    let firstTokenAt = 0;
    let end: DecodeEnd = {reason: "length"};
    const generated = record.generated;
    try {
      steps: for (const step of playback(reply)) {
        if (generated.length >= job.maxTokens) break;
        const waited = (step.wait === undefined || await pause(step.wait, signal)) && (!step.delayMs || await pause(step.delayMs, signal));
        if (!waited || signal.aborted) {
          end = {reason: "cancelled"};
          break;
        }
        const token = step.token;
        if (firstTokenAt === 0) {
          // The last piece is evaluated with the first step: the region holds it, and reports it, only now (as the real engine does).
          region.tokens.push(...job.prompt.slice(last[0], last[1]));
          region.cuts.push(last[1]);
          firstTokenAt = performance.now();
          stats.promptMs = firstTokenAt - started;
          yield {kind: "progress", processed: job.prompt.length, elapsedMs: stats.promptMs};
        }
        const stopping = job.stopTokenIds.has(token);
        const action = (stopping ? job.steering?.onStop?.(token) : job.steering?.onToken(token)) ?? null;
        if (stopping && !action?.replaceWith) {
          end = {reason: "stop_token", token};
          break;
        }
        let emitted = [token];
        if (action?.replaceWith) {
          emitted = action.replaceWith;
          if (emitted.length === 0 || generated.length + emitted.length > job.maxTokens) break;
        }
        if (action?.bind) record.bound.push(action.bind.grammar?.key ?? null);
        for (const t of emitted) {
          generated.push(t);
          region.tokens.push(t);
          stats.predictedTokens = generated.length;
          stats.predictedMs = performance.now() - firstTokenAt;
          yield job.logprobs ? {kind: "token", token: t, score: scoreOf(t, job.logprobs.top)} : {kind: "token", token: t};
          if (signal.aborted) {
            end = {reason: "cancelled"};
            break steps;
          }
        }
      }
    } finally {
      if (firstTokenAt === 0) stats.promptMs = performance.now() - started;
      else stats.predictedMs = performance.now() - firstTokenAt;
    }
    if (end.reason !== "cancelled" && !signal.aborted) onFinished();
    record.end = end;
    return end;
  }
}

function ratio(a: number, b: number): number {
  return b > 0 ? Math.round((a / b) * 10000) / 10000 : 0;
}
