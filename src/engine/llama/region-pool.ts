// The region pool: the context's sequences as busy, held (a warm conversation between turns) or free
// regions. It places each request (kv/placement.ts decides; this file carries it out with the library's
// sequence operations), seals finished replies so the next turn can reuse them exactly, writes held states
// that are about to be overwritten to the disk tier, and keeps the cache numbers.
//
// All preparation (copies, moves, loads, saves, erases) runs one at a time (Serial), so a placement always sees
// the regions as they are; the long parts (sealing a reply, decoding) run outside it.
//
// When seals run: a reply a session keeps is sealed at once (the keep needs the exact state). Any other reply is
// left as an unsealed tail and sealed only once the engine has been idle for IDLE_SEAL_MS, stopping at the next
// piece as soon as a request arrives. Sealing every reply at once cost each next request its wait (measured in
// bench:vs-llama-server: 0.34 s of a 1-stream TTFT, 3 s of a 4-concurrent one), mostly for replies nobody
// continued; a follow-up that does continue an unsealed reply evaluates it as part of its own prompt, the same
// work the seal would have done, and a human's next turn (seconds later) finds it sealed.
// All of that applies only when reuse is matched by pieces. When the engine's probe showed that reuse may be
// matched by row class (kv/row-classes.ts), a reply is exact as decoded: it is recorded at release (kept ones
// saved at once) and nothing is sealed.

import type {LlamaContextSequence} from "node-llama-cpp";
import type {Logger} from "../../observability/log.ts";
import type {KeepHook, ReleaseOptions, ResumeState, StartInfo} from "../engine.ts";
import type {DiskReport} from "../kv/cache-report.ts";
import {CacheStats} from "../kv/cache-stats.ts";
import type {DiskStore, DiskEntry} from "../kv/disk-store.ts";
import {Serial} from "../../core/serial.ts";
import {pickTarget, place, type Placement, type StateCandidate} from "../kv/placement.ts";
import {commonPrefix, emptyMemory, exactLength, planCuts, reusable, type CutPlan, type RegionMemory} from "../kv/region-memory.ts";
import {planByRows, resumeAt, type Span} from "../kv/row-classes.ts";
import type {RegionQueue} from "../region-queue.ts";
import {copySequenceState} from "./internals.ts";
import {evaluateReply, recordDecodedReply, sealLeft, type PendingSeal, type Seal} from "./reply-seal.ts";

/** A stored state must serve this many more tokens than memory to be worth reading. */
const STATE_MARGIN = 16;
/** A prefix held in another region is copied in only when it serves at least this many tokens (a role header is not worth it). */
const MIN_COPY = 16;
/** Held states shorter than this are not worth a disk write. */
const MIN_DISK_TOKENS = 128;
/** How many overwritten states are remembered (tokens only) to tell "evicted" from "cold". */
const EVICTED_LEDGER = 32;
/** Idle time before unsealed replies are sealed: longer than the gap between an agent's turns or a client's back-to-back requests. */
export const IDLE_SEAL_MS = 300;
/** A cold prefill of at least this many new tokens marks the cache report stale while it runs. */
export const LONG_PREFILL_TOKENS = 512;

interface Region {
  id: number;
  seq: LlamaContextSequence;
  memory: RegionMemory;
  seal: Seal | null;
  pending: PendingSeal | null;
}

type StateRef = {kind: "disk"; entry: DiskEntry} | {kind: "handle"; resume: ResumeState};

export interface PoolOptions {
  piece: number;
  /** How reused KV is matched to a cold evaluation (the engine's load-time probe decides; see kv/region-memory.ts). */
  match: CutPlan["match"];
  cacheOn: boolean;
  positionsPerRegion: number;
  bytesPerPosition: number;
  disk: DiskStore | null;
  logger: Logger;
}

export class RegionPool {
  readonly regions: Region[];
  readonly stats: CacheStats;
  private readonly prep = new Serial();
  private readonly evicted: {tokens: number[]; cuts: number[]}[] = [];
  private idleTimer: NodeJS.Timeout | null = null;
  /** Preparations started and not finished, and prompt pieces held back until there are none (see prepare()). */
  private preparing = 0;
  private heldPieces: (() => void)[] = [];
  private closed = false;

  constructor(sequences: LlamaContextSequence[], private readonly queue: RegionQueue, private readonly opts: PoolOptions) {
    this.regions = sequences.map((seq, id) => ({id, seq, memory: emptyMemory(), seal: null, pending: null}));
    this.stats = new CacheStats(opts.cacheOn, {regions: sequences.length, positionsPerRegion: opts.positionsPerRegion});
  }

  planCuts(length: number, marks: {boundaries: readonly number[]; replySpans: readonly Span[]}): CutPlan {
    return this.opts.match === "rows"
      ? {cuts: planByRows(length, marks, this.opts.piece), match: "rows"}
      : {cuts: planCuts(length, this.opts.piece, marks.boundaries), match: "pieces"};
  }

  /** Prepares the granted region for the prompt and says how the request starts. */
  /**
   * A preparation erases, copies, loads and saves through node-llama-cpp, which takes the context's lock; its
   * batch loop holds that lock for as long as any decode is queued, so beside streams that are generating a
   * preparation waited for all of them to finish (measured: about 2 s of prep_ms for half the requests of
   * 4 concurrent streams). A generating sequence queues its next step within microtasks of getting its token,
   * before the loop looks at its queue again, so the queue never empties on its own. While a preparation is
   * pending, every run holds its next piece or step back (beforeDecode()): the batch in flight then leaves
   * the queue empty, the loop lets go of the lock, the preparation runs, and the runs go on.
   */
  async prepare(target: number, prompt: readonly number[], plan: CutPlan, resume: ResumeState | null): Promise<StartInfo> {
    this.preparing++;
    try {
      return await this.prep.run(() => this.prepareLocked(target, prompt, plan, resume));
    } finally {
      if (--this.preparing === 0) for (const go of this.heldPieces.splice(0)) go();
    }
  }

  /** Resolves when no preparation is pending: a run awaits it before queueing each prompt piece or decode step. */
  beforeDecode(): Promise<void> {
    if (this.preparing === 0) return Promise.resolve();
    return new Promise((resolve) => this.heldPieces.push(resolve));
  }

  private async prepareLocked(targetId: number, prompt: readonly number[], plan: CutPlan, resume: ResumeState | null): Promise<StartInfo> {
    const sealing = await this.settleSeals(prompt, targetId);
    const states: StateCandidate<StateRef>[] = [];
    if (this.opts.cacheOn) {
      if (resume) states.push({tokens: resume.tokens, cuts: resume.cuts, origin: "handle", ref: {kind: "handle", resume}});
      const disk = this.opts.disk;
      if (disk?.enabled) {
        const hit = disk.longestMatch(prompt, (e) => reusable(e, prompt, plan).length);
        if (hit) states.push({tokens: hit.entry.tokens, cuts: hit.entry.cuts, origin: "disk", ref: {kind: "disk", entry: hit.entry}});
      }
    }
    const target = this.regions[targetId]!;
    target.pending = null;
    const p = place<StateRef>({regions: this.regions.map((r) => ({id: r.id, busy: r.id !== targetId && (this.queue.isBusy(r.id) || sealing.has(r.id)),
      memory: r.memory})),
      target: targetId, prompt, plan, states, evicted: this.evicted, cacheOn: this.opts.cacheOn, stateMargin: STATE_MARGIN, minCopy: MIN_COPY});
    let source: StartInfo["source"] = "none";
    let reuse = p.reuse;
    // Save what this placement overwrites before anything moves.
    for (const id of p.overwritten) {
      this.regions[id]!.pending = null;
      await this.retire(this.regions[id]!);
    }
    if (p.moveAsideTo !== null) {
      const aside = this.regions[p.moveAsideTo]!;
      aside.pending = null;
      await this.copy(target, aside, exactLength(target.memory));
    }
    if (p.source.kind === "region" && p.source.id !== targetId) {
      await this.copy(this.regions[p.source.id]!, target, reuse);
      source = "copy";
    } else if (p.source.kind === "region") {
      source = "memory";
    } else if (p.source.kind === "state") {
      const ok = await this.loadState(target, p.source.state.ref);
      if (ok) {
        target.memory = {tokens: [...p.source.state.tokens], cuts: [...p.source.state.cuts], lastUsed: performance.now(), replyStart: 0};
        source = p.source.state.origin;
      } else {
        reuse = 0;
      }
    }
    if (source === "none" || source === "memory" || source === "disk" || source === "handle") await this.truncate(target, reuse);
    target.memory = {tokens: prompt.slice(0, reuse), cuts: resumeAt(target.memory.cuts, reuse), lastUsed: performance.now(), replyStart: 0};
    if (source === "disk" && p.source.kind === "state" && p.source.state.ref.kind === "disk") {
      // The conversation now lives in memory and will be written again, longer, when it is evicted.
      const entry = p.source.state.ref.entry;
      await this.opts.disk!.drop(entry, reuse < exactLength(entry));
    }
    const placed: Placement<StateRef> = {...p, reuse};
    this.stats.recordPlacement(placed, prompt.length);
    const miss = reuse === 0 && p.reuse > 0 ? "state_unreadable" : p.miss ? p.miss.reason + (p.miss.at !== undefined ? `@${p.miss.at}` : "") : null;
    return {reused: reuse, source: reuse > 0 ? source : "none", miss};
  }

  /** Whether the prompt continues into the reply a region is sealing (then waiting for the seal pays). */
  continuesSeal(id: number, prompt: readonly number[]): boolean {
    const seal = this.regions[id]!.seal;
    if (!seal) return false;
    return commonPrefix(seal.tokens, prompt) > seal.promptLength;
  }

  /**
   * The region a new request runs on, among the free ones: the one sealing a reply this prompt continues,
   * else pickTarget's choice among regions not sealing (a seal in progress is left to finish when it can).
   */
  chooseTarget(free: readonly number[], prompt: readonly number[], plan: CutPlan): number {
    const continued = free.find((i) => this.continuesSeal(i, prompt));
    if (continued !== undefined) return continued;
    const busy = this.regions.map((r) => r.id).filter((i) => this.queue.isBusy(i));
    const settled = free.filter((i) => this.regions[i]!.seal === null);
    return pickTarget(settled.length > 0 ? settled : free, busy, this.regions.map((r) => r.memory), prompt, plan, this.opts.cacheOn);
  }

  /**
   * Seals in progress: wait for those whose reply this prompt continues (or that a session keeps), for those
   * holding a longer prefix of it than any settled region when the seal has less left to evaluate than the
   * prefix saves (a classifier loop's next item shares the system message with the one-token item just
   * answered: it waits for that short seal and copies the prefix instead of starting cold; a short prompt
   * beside a long reply's seal does not wait), and for the target's; the target's is stopped first when the
   * prompt does not continue it.
   * Other seals go on, and their regions are left out of this placement.
   */
  private async settleSeals(prompt: readonly number[], target: number): Promise<Set<number>> {
    const untouchable = new Set<number>();
    let settledBest = 0;
    for (const r of this.regions) {
      if (r.seal || (r.id !== target && this.queue.isBusy(r.id))) continue;
      settledBest = Math.max(settledBest, commonPrefix(r.memory.tokens.slice(0, exactLength(r.memory)), prompt));
    }
    for (const r of this.regions) {
      const seal = r.seal;
      if (!seal) continue;
      const continues = this.continuesSeal(r.id, prompt);
      const offers = this.opts.cacheOn ? commonPrefix(seal.tokens, prompt) : 0;
      if (r.id === target) {
        if (!seal.keep && !continues) seal.abort();
        await seal.done;
      } else if (continues || seal.keep || (offers >= MIN_COPY && offers - settledBest >= sealLeft(seal))) {
        await seal.done;
      } else {
        untouchable.add(r.id);
      }
    }
    return untouchable;
  }

  /**
   * After a reply: a kept one is re-evaluated in pieces (see region-memory.ts) at once and handed to `keep`;
   * any other is released now and sealed when the engine is idle (see the top of this file).
   */
  seal(id: number, promptLength: number, generated: readonly number[], opts: ReleaseOptions, release: () => void): Promise<void> {
    const r = this.regions[id]!;
    if (this.opts.match === "rows") return this.recordReply(r, promptLength, opts.keep, release);
    if (opts.keep === undefined) {
      release();
      if (this.opts.cacheOn && generated.length > 0 && exactLength(r.memory) === promptLength) {
        r.pending = {promptLength, generated: [...generated], boundaries: [...(opts.replyBoundaries ?? [])], replyStart: promptLength};
        this.scheduleIdleSeal();
      }
      return Promise.resolve();
    }
    return this.startSeal(r, promptLength, generated, opts, release);
  }

  /**
   * Reuse matched by row class: the decoded reply is exact as it stands; recorded (and handed to `keep` at
   * once) before the region is released. Also after a cancelled run: what it decoded is as exact.
   */
  recordReply(r: Region, promptLength: number, keep: KeepHook | undefined, release: () => void): Promise<void> {
    const work = (async () => {
      if (!this.opts.cacheOn || exactLength(r.memory) !== promptLength) return;
      await recordDecodedReply(r, promptLength);
      if (keep) await keep({tokens: [...r.memory.tokens], cuts: [...r.memory.cuts], replyStart: r.memory.replyStart},
        (path) => r.seq.saveStateToFile(path).then(() => undefined));
    })().catch(async (err: Error) => {
      this.opts.logger.warn("recording a reply failed; the region starts over", {region: r.id, error: err.message});
      await this.truncate(r, 0).catch(() => undefined);
      r.memory = emptyMemory();
    });
    return work.finally(release);
  }

  /** Whether nothing runs or waits: only then may an unsealed reply take the cores. */
  private idle(): boolean {
    return this.queue.queued === 0 && this.regions.every((r) => !this.queue.isBusy(r.id));
  }

  private scheduleIdleSeal(): void {
    if (this.closed) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      this.sealOneIdle();
    }, IDLE_SEAL_MS);
    this.idleTimer.unref();
  }

  /** Seals the most recently used pending reply if the engine is idle, then schedules the next. */
  private sealOneIdle(): void {
    if (this.closed) return;
    // Busy: look again later (the timer only runs while some reply waits for its seal).
    if (!this.idle() || this.regions.some((r) => r.seal)) return this.scheduleIdleSeal();
    const candidates = this.regions.filter((r) => r.pending && !this.queue.isBusy(r.id)).sort((a, b) => b.memory.lastUsed - a.memory.lastUsed);
    const r = candidates[0];
    if (!r) return;
    const pending = r.pending!;
    r.pending = null;
    // The region holds the exact part and either the reply as decoded or (after an interrupted seal) nothing more.
    const tail = r.memory.tokens.slice(pending.promptLength);
    const unchanged = exactLength(r.memory) === pending.promptLength &&
      (tail.length === 0 || (tail.length === pending.generated.length && tail.every((t, i) => t === pending.generated[i])));
    if (!unchanged) return this.scheduleIdleSeal();
    void this.startSeal(r, pending.promptLength, pending.generated, {replyBoundaries: pending.boundaries}, () => undefined, pending.replyStart);
  }

  private startSeal(r: Region, promptLength: number, generated: readonly number[], opts: ReleaseOptions, release: () => void,
    replyStart = promptLength): Promise<void> {
    const id = r.id;
    const keep = opts.keep;
    let aborted = false;
    let resolveDone!: () => void;
    const done = new Promise<void>((res) => (resolveDone = res));
    const seal: Seal = {done, abort: () => (aborted = true), keep: keep !== undefined, tokens: [...r.memory.tokens.slice(0, promptLength), ...generated],
      promptLength, progress: 0};
    // An idle seal gives way at its next piece to any request (running or waiting); a kept one runs to its end.
    const shouldStop = () => aborted || (!seal.keep && !this.idle());
    const work = this.prep.run(async () => {
      // Started in the serial queue so no placement runs halfway through; the evaluation itself runs outside it.
      if (r.seal || (!seal.keep && this.queue.isBusy(id))) return false;
      r.seal = seal;
      return true;
    }).then(async (started) => {
      if (!started) return;
      const sealStart = performance.now();
      try {
        if (this.opts.cacheOn && exactLength(r.memory) === promptLength && generated.length > 0) {
          await this.truncate(r, promptLength);
          await evaluateReply(r, this.opts.piece, {promptLength, generated, boundaries: opts.replyBoundaries ?? [], replyStart}, shouldStop,
            (n) => (seal.progress = n));
          this.stats.sealS += (performance.now() - sealStart) / 1000;
          if (seal.progress === generated.length) this.stats.seals++;
          // Interrupted by a request: the rest waits for the next idle moment (unless a placement takes the region).
          else if (!aborted) r.pending = {promptLength: promptLength + seal.progress, generated: generated.slice(seal.progress),
            boundaries: opts.replyBoundaries ?? [], replyStart};
        }
        if (keep) await keep({tokens: [...r.memory.tokens.slice(0, exactLength(r.memory))], cuts: [...r.memory.cuts], replyStart: r.memory.replyStart},
          (path) => r.seq.saveStateToFile(path).then(() => undefined));
      } catch (err) {
        this.opts.logger.warn("sealing a reply failed; the region starts over", {region: id, error: (err as Error).message});
        await this.truncate(r, 0).catch(() => undefined);
        r.memory = emptyMemory();
      } finally {
        r.seal = null;
        resolveDone();
        if (this.regions.some((x) => x.pending)) this.scheduleIdleSeal();
      }
    });
    return work.finally(release);
  }

  /** A held state about to be overwritten: remembered for miss reasons and written to the disk tier. */
  private async retire(r: Region): Promise<void> {
    const exact = exactLength(r.memory);
    if (exact === 0) return;
    const tokens = r.memory.tokens.slice(0, exact);
    this.evicted.push({tokens, cuts: [...r.memory.cuts]});
    if (this.evicted.length > EVICTED_LEDGER) this.evicted.shift();
    const disk = this.opts.disk;
    if (!disk?.enabled || exact < MIN_DISK_TOKENS) return;
    await this.truncate(r, exact);
    await disk.put({tokens, cuts: r.memory.cuts}, (path) => r.seq.saveStateToFile(path).then(() => undefined));
  }

  private async copy(from: Region, to: Region, upTo: number): Promise<void> {
    await copySequenceState(to.seq, from.seq, upTo);
    to.memory = {tokens: from.memory.tokens.slice(0, upTo), cuts: resumeAt(from.memory.cuts, upTo),
      lastUsed: from.memory.lastUsed, replyStart: from.memory.replyStart < upTo ? from.memory.replyStart : 0};
  }

  private async loadState(r: Region, ref: StateRef): Promise<boolean> {
    const read = async (path: string) => {
      await r.seq.loadStateFromFile(path, {acceptRisk: true});
    };
    try {
      if (ref.kind === "disk") {
        const ok = await this.opts.disk!.load(ref.entry, read);
        if (!ok) await this.truncate(r, 0);
        return ok;
      }
      if (!(await ref.resume.verify())) {
        this.opts.logger.warn("a session state file failed its check and was not loaded", {path: ref.resume.path});
        return false;
      }
      await read(ref.resume.path);
      return true;
    } catch (err) {
      this.opts.logger.warn("loading a state file failed; starting cold", {error: (err as Error).message});
      await this.truncate(r, 0).catch(() => undefined);
      r.memory = emptyMemory();
      return false;
    }
  }

  private async truncate(r: Region, keep: number): Promise<void> {
    if (r.seq.nextTokenIndex > keep) await r.seq.eraseContextTokenRanges([{start: keep, end: r.seq.nextTokenIndex}]);
    if (keep === 0) r.memory = emptyMemory();
  }

  /** At shutdown: held states go to the disk tier, so a restarted server picks up where it was. */
  flush(): Promise<number> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    return this.prep.run(async () => {
      for (const r of this.regions) if (!r.seal?.keep) r.seal?.abort();
      let written = 0;
      for (const r of this.regions) {
        await r.seal?.done;
        if (this.queue.isBusy(r.id) || exactLength(r.memory) < MIN_DISK_TOKENS || !this.opts.disk?.enabled) continue;
        const before = this.opts.disk.writes;
        await this.retire(r);
        if (this.opts.disk.writes > before) written++;
      }
      return written;
    });
  }

  /** Occupancy for the report: busy regions count their positions, held ones their exact state. */
  report(disk: DiskReport): ReturnType<CacheStats["report"]> {
    let used = 0;
    let busy = 0;
    let held = 0;
    let heldPositions = 0;
    for (const r of this.regions) {
      if (this.queue.isBusy(r.id)) {
        busy++;
        used += r.seq.nextTokenIndex;
      } else if (exactLength(r.memory) > 0) {
        held++;
        heldPositions += exactLength(r.memory);
        used += r.seq.nextTokenIndex;
      }
    }
    return this.stats.report({usedPositions: used, busyRegions: busy, heldRegions: held, heldPositions, waiting: this.queue.queued,
      bytesPerPosition: this.opts.bytesPerPosition, sealing: this.regions.filter((r) => r.seal).length,
      unsealed: this.regions.filter((r) => r.pending).length}, disk);
  }
}
