// The region pool: the context's sequences as busy, held (a warm conversation between turns) or free
// regions. It places each request (kv/placement.ts decides; this file carries it out with the library's
// sequence operations), hands finished replies to finished-replies.ts, writes held states
// that are about to be overwritten to the disk tier, and keeps the cache numbers.
//
// All preparation (copies, moves, loads, saves, erases) runs one at a time (Serial), so a placement always sees
// the regions as they are; the long parts (sealing a reply, decoding) run outside it. What happens to a
// finished reply (recorded as decoded, or sealed now or when idle) is finished-replies.ts.

import type {LlamaContextSequence} from "node-llama-cpp";
import type {Logger} from "../../observability/log.ts";
import type {ReleaseOptions, ResumeState, StartInfo} from "../engine.ts";
import type {DiskReport} from "../../core/engine-report.ts";
import {CacheStats} from "../kv/cache-stats.ts";
import type {DiskStore, DiskEntry} from "../kv/disk-store.ts";
import {Serial} from "../../core/serial.ts";
import {pickTarget, place, type Placement, type StateCandidate} from "../kv/placement.ts";
import {commonPrefix, emptyMemory, exactLength, planCuts, reusable, type CutPlan, type RegionMemory} from "../kv/region-memory.ts";
import {planByRows, resumeAt, type Span} from "../kv/row-classes.ts";
import type {RegionQueue} from "../region-queue.ts";
import {copySequenceState} from "./internals.ts";
import {SharedPrefill} from "./shared-prefill.ts";
import {FinishedReplies} from "./finished-replies.ts";
import {sealLeft, type PendingSeal, type Seal} from "./reply-seal.ts";

/** A stored state must serve this many more tokens than memory to be worth reading. */
const STATE_MARGIN = 16;
/** A prefix held in another region is copied in only when it serves at least this many tokens (a role header is not worth it). */
const MIN_COPY = 16;
/** Held states shorter than this are not worth a disk write. */
const MIN_DISK_TOKENS = 128;
/** How many overwritten states are remembered (tokens only) to tell "evicted" from "cold". */
const EVICTED_LEDGER = 32;
/** A cold prefill of at least this many new tokens marks the cache report stale while it runs. */
export const LONG_PREFILL_TOKENS = 512;

export interface Region {
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
  /** Requests starting on the prefix another region is evaluating wait for it and copy it (shared-prefill.ts). */
  readonly shared: SharedPrefill;
  private readonly prep = new Serial();
  private readonly evicted: {tokens: number[]; cuts: number[]}[] = [];
  /** Preparations started and not finished, and prompt pieces held back until there are none (see prepare()). */
  private preparing = 0;
  private heldPieces: (() => void)[] = [];
  /** What happens to finished replies: recorded as decoded, or sealed (finished-replies.ts). */
  private readonly finished: FinishedReplies;

  constructor(sequences: LlamaContextSequence[], private readonly queue: RegionQueue, private readonly opts: PoolOptions) {
    this.regions = sequences.map((seq, id) => ({id, seq, memory: emptyMemory(), seal: null, pending: null}));
    this.stats = new CacheStats(opts.cacheOn, {regions: sequences.length, positionsPerRegion: opts.positionsPerRegion});
    this.finished = new FinishedReplies({regions: this.regions, queue, prep: this.prep, stats: this.stats, opts,
      truncate: (r, keep) => this.truncate(r, keep)});
    this.shared = new SharedPrefill(() => this.regions.map((r) => ({id: r.id, busy: this.queue.isBusy(r.id), memory: r.memory})), opts.cacheOn);
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
      copyable: this.queue.isBusy(r.id) && !r.seal && !sealing.has(r.id), memory: r.memory})),
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

  /** After a reply: recorded as decoded, or sealed now (kept) or when idle (finished-replies.ts). */
  seal(id: number, promptLength: number, generated: readonly number[], opts: ReleaseOptions, release: () => void): Promise<void> {
    return this.finished.release(this.regions[id]!, promptLength, generated, opts, release);
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
    this.finished.close();
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
      unsealed: this.regions.filter((r) => r.pending).length, reuseMatch: this.opts.match, prefixWaits: this.shared.waits,
      prefixWaitS: this.shared.waitedS}, disk);
  }
}
