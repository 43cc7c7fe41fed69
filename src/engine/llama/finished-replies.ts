// What happens to a finished reply so the next turn can reuse it exactly. Matched by row class
// (kv/row-classes.ts) it is recorded as decoded. Matched by pieces it must be sealed (re-evaluated in prompt
// pieces, reply-seal.ts): a reply a session keeps is sealed at once (the keep needs the exact state); any
// other is left as an unsealed tail and sealed only once the engine has been idle for IDLE_SEAL_MS, stopping
// at the next piece as soon as a request arrives. Sealing every reply at once cost each next request its
// wait (measured in bench:vs-llama-server: 0.34 s of a 1-stream TTFT, 3 s of a 4-concurrent one), mostly for
// replies nobody continued; a follow-up that does continue an unsealed reply evaluates it as part of its own
// prompt, the same work the seal would have done, and a human's next turn (seconds later) finds it sealed.

import type {Serial} from "../../core/serial.ts";
import type {Logger} from "../../observability/log.ts";
import type {KeepHook, ReleaseOptions} from "../engine.ts";
import type {CacheStats} from "../kv/cache-stats.ts";
import {emptyMemory, exactLength, type CutPlan} from "../kv/region-memory.ts";
import type {RegionQueue} from "../region-queue.ts";
import type {Region} from "./region-pool.ts";
import {evaluateReply, recordDecodedReply, type Seal} from "./reply-seal.ts";

/** Idle time before unsealed replies are sealed: longer than the gap between an agent's turns or a client's back-to-back requests. */
export const IDLE_SEAL_MS = 300;

export interface FinishedRepliesHost {
  regions: readonly Region[];
  queue: RegionQueue;
  /** The pool's serial preparation queue: a seal starts inside it, so no placement runs halfway through. */
  prep: Serial;
  stats: CacheStats;
  opts: {cacheOn: boolean; piece: number; match: CutPlan["match"]; logger: Logger};
  truncate(r: Region, keep: number): Promise<void>;
}

export class FinishedReplies {
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly host: FinishedRepliesHost) {}

  /** At shutdown: no more idle seals. */
  close(): void {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
  }

  /**
   * After a reply: a kept one is re-evaluated in pieces (see region-memory.ts) at once and handed to `keep`;
   * any other is released now and sealed when the engine is idle (see the top of this file).
   */
  release(r: Region, promptLength: number, generated: readonly number[], opts: ReleaseOptions, release: () => void): Promise<void> {
    if (this.host.opts.match === "rows") return this.recordReply(r, promptLength, opts.keep, release);
    if (opts.keep === undefined) {
      release();
      if (this.host.opts.cacheOn && generated.length > 0 && exactLength(r.memory) === promptLength) {
        r.pending = {promptLength, generated: [...generated], boundaries: [...(opts.replyBoundaries ?? [])], replyStart: promptLength};
        this.scheduleIdleSeal();
      }
      return Promise.resolve();
    }
    return this.startSeal(r, promptLength, generated, opts, release);
  }

  /**
   * Reuse matched by row class: the decoded reply is exact as it stands; recorded (and handed to `keep` at
   * once) before the region is released. Also what a cancelled run decoded (never kept for a session).
   */
  private recordReply(r: Region, promptLength: number, keep: KeepHook | undefined, release: () => void): Promise<void> {
    const work = (async () => {
      if (!this.host.opts.cacheOn || exactLength(r.memory) !== promptLength) return;
      await recordDecodedReply(r, promptLength);
      if (keep) await keep({tokens: [...r.memory.tokens], cuts: [...r.memory.cuts], replyStart: r.memory.replyStart},
        (path) => r.seq.saveStateToFile(path).then(() => undefined));
    })().catch(async (err: Error) => {
      this.host.opts.logger.warn("recording a reply failed; the region starts over", {region: r.id, error: err.message});
      await this.host.truncate(r, 0).catch(() => undefined);
      r.memory = emptyMemory();
    });
    return work.finally(release);
  }

  /** Whether nothing runs or waits: only then may an unsealed reply take the cores. */
  private idle(): boolean {
    return this.host.queue.queued === 0 && this.host.regions.every((r) => !this.host.queue.isBusy(r.id));
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
    if (!this.idle() || this.host.regions.some((r) => r.seal)) return this.scheduleIdleSeal();
    const candidates = this.host.regions.filter((r) => r.pending && !this.host.queue.isBusy(r.id)).sort((a, b) => b.memory.lastUsed - a.memory.lastUsed);
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
    const work = this.host.prep.run(async () => {
      // Started in the serial queue so no placement runs halfway through; the evaluation itself runs outside it.
      if (r.seal || (!seal.keep && this.host.queue.isBusy(id))) return false;
      r.seal = seal;
      return true;
    }).then(async (started) => {
      if (!started) return;
      const sealStart = performance.now();
      try {
        if (this.host.opts.cacheOn && exactLength(r.memory) === promptLength && generated.length > 0) {
          await this.host.truncate(r, promptLength);
          await evaluateReply(r, this.host.opts.piece, {promptLength, generated, boundaries: opts.replyBoundaries ?? [], replyStart}, shouldStop,
            (n) => (seal.progress = n));
          this.host.stats.sealS += (performance.now() - sealStart) / 1000;
          if (seal.progress === generated.length) this.host.stats.seals++;
          // Interrupted by a request: the rest waits for the next idle moment (unless a placement takes the region).
          else if (!aborted) r.pending = {promptLength: promptLength + seal.progress, generated: generated.slice(seal.progress),
            boundaries: opts.replyBoundaries ?? [], replyStart};
        }
        if (keep) await keep({tokens: [...r.memory.tokens.slice(0, exactLength(r.memory))], cuts: [...r.memory.cuts], replyStart: r.memory.replyStart},
          (path) => r.seq.saveStateToFile(path).then(() => undefined));
      } catch (err) {
        this.host.opts.logger.warn("sealing a reply failed; the region starts over", {region: id, error: (err as Error).message});
        await this.host.truncate(r, 0).catch(() => undefined);
        r.memory = emptyMemory();
      } finally {
        r.seal = null;
        resolveDone();
        if (this.host.regions.some((x) => x.pending)) this.scheduleIdleSeal();
      }
    });
    return work.finally(release);
  }
}
