// The disk tier of the prompt cache: KV states of evicted regions kept as files inside a byte budget, so a
// later prompt sharing their prefix loads them instead of recomputing them. The engine does the saving
// and loading through callbacks; this file decides what is kept, what matches, and what is trusted.
// Nothing here throws: a cache dir that cannot be written, or a disk that fills up, turns the tier off
// with one warn line, and the server goes on without it. Every mutation runs through one promise chain,
// so a put arriving while a load is still reading never removes or rewrites the file being read.

import {randomBytes} from "node:crypto";
import {mkdir, readdir, rm, writeFile} from "node:fs/promises";
import {join} from "node:path";
import type {Logger} from "../../observability/log.ts";
import {Serial} from "../../core/serial.ts";
import {commonPrefix} from "./region-memory.ts";
import type {DiskReport} from "../../core/engine-report.ts";
import {MANIFEST_SUFFIX, newStateId, readManifest, removeState, STATE_SUFFIX, statePath, touchManifest, verifyState,
  writeState, type StateIdentity, type StateManifest} from "./state-files.ts";

export interface DiskEntry {
  id: string;
  tokens: readonly number[];
  cuts: readonly number[];
  bytes: number;
  lastUsed: number;
}

export interface DiskStoreOptions {
  dir: string;
  budgetBytes: number;
  identity: StateIdentity;
  logger: Logger;
}

interface Held {
  entry: DiskEntry;
  manifest: StateManifest;
  /** Recency within this process: lastUsed is in ms, and several puts land in the same ms. */
  seq: number;
}

const LABEL = "disk-tier";
/** Names newStateId() makes; anything else in the dir (a user's notes.json) is not ours and is left alone. */
const OURS = /^([0-9a-z]+-[0-9a-f]{12})(\.json|\.ggsq)(\.tmp)?$/;

function errorCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e?.code ?? (e instanceof Error ? e.message : String(err));
}

function startsWith(seq: readonly number[], prefix: readonly number[]): boolean {
  return seq.length >= prefix.length && commonPrefix(seq, prefix) === prefix.length;
}

function includesAll(cuts: readonly number[], wanted: readonly number[]): boolean {
  const have = new Set(cuts);
  return wanted.every((c) => have.has(c));
}

/** a was used before b. */
function older(a: Held, b: Held): boolean {
  return a.entry.lastUsed !== b.entry.lastUsed ? a.entry.lastUsed < b.entry.lastUsed : a.seq < b.seq;
}

export class DiskStore {
  private readonly held = new Map<string, Held>();
  private readonly queue = new Serial();
  private on = true;
  private reason: string | null = null;
  private total = 0;
  private nextSeq = 0;
  private counts = {hits: 0, writes: 0, rejected: 0, cutBack: 0, superseded: 0, evicted: 0};

  private constructor(private readonly opts: DiskStoreOptions) {}

  static async open(opts: DiskStoreOptions): Promise<DiskStore> {
    const store = new DiskStore(opts);
    let names: string[];
    try {
      await mkdir(opts.dir, {recursive: true});
      const probe = join(opts.dir, `.svc-probe-${randomBytes(6).toString("hex")}`);
      await writeFile(probe, "");
      await rm(probe, {force: true});
      names = await readdir(opts.dir);
    } catch (err) {
      const code = errorCode(err);
      store.disable(`${opts.dir} is not writable (${code})`);
      opts.logger.warn(`SVC_CACHE_DIR ${opts.dir} is not writable (${code}); the disk tier is off; `
        + "fix the permissions or unset SVC_CACHE_DIR");
      return store;
    }
    await store.serial(() => store.scan(names));
    return store;
  }

  get enabled(): boolean { return this.on; }
  get dir(): string { return this.opts.dir; }
  get bytes(): number { return this.total; }
  get budgetBytes(): number { return this.opts.budgetBytes; }
  get entries(): number { return this.held.size; }
  get hits(): number { return this.counts.hits; }
  get writes(): number { return this.counts.writes; }
  get rejected(): number { return this.counts.rejected; }
  get cutBack(): number { return this.counts.cutBack; }
  /** Entries removed because a longer state of the same conversation was written. */
  get superseded(): number { return this.counts.superseded; }
  /** Entries removed to stay inside the budget. */
  get evicted(): number { return this.counts.evicted; }
  get disabledReason(): string | null { return this.reason; }

  list(): readonly DiskEntry[] {
    return [...this.held.values()].map((h) => h.entry);
  }

  report(): DiskReport {
    return {enabled: this.on, dir: this.opts.dir, bytes: this.total, budget_bytes: this.opts.budgetBytes, entries: this.held.size,
      hits: this.counts.hits, writes: this.counts.writes, rejected: this.counts.rejected, cut_back: this.counts.cutBack,
      disabled_reason: this.reason};
  }

  /** The entry the engine can reuse most of; `usable` turns a common prefix into what is exactly reusable. */
  longestMatch(prompt: readonly number[], usable: (entry: DiskEntry, commonPrefix: number) => number):
    {entry: DiskEntry; length: number} | null {
    if (!this.on) return null;
    let best: {held: Held; length: number} | null = null;
    for (const h of this.held.values()) {
      const common = commonPrefix(h.entry.tokens, prompt);
      if (common === 0) continue;
      const length = usable(h.entry, common);
      if (length <= 0) continue;
      if (!best || length > best.length || (length === best.length && older(best.held, h))) best = {held: h, length};
    }
    return best && {entry: best.held.entry, length: best.length};
  }

  /** Writes a state unless one already on disk serves it; null when nothing new was kept. */
  put(meta: {tokens: readonly number[]; cuts: readonly number[]}, write: (path: string) => Promise<void>): Promise<DiskEntry | null> {
    return this.serial(async () => {
      if (!this.on || this.opts.budgetBytes <= 0 || meta.tokens.length === 0) return null;
      const covering = [...this.held.values()].find((h) => startsWith(h.entry.tokens, meta.tokens)
        && (h.entry.tokens.length === meta.tokens.length || includesAll(h.entry.cuts, meta.cuts)));
      if (covering) {
        await this.touch(covering);
        return null;
      }
      const id = newStateId();
      let manifest: StateManifest;
      try {
        manifest = await writeState(this.opts.dir, id, {...meta, label: LABEL}, this.opts.identity, write);
      } catch (err) {
        const code = errorCode(err);
        this.disable(`writing a state failed (${code})`);
        this.opts.logger.warn(`disk tier: writing a state to ${this.opts.dir} failed (${code}); the disk tier is now off `
          + "until restart; free space or fix the permissions there, or unset SVC_CACHE_DIR");
        return null;
      }
      this.counts.writes++;
      const added = this.add(manifest, id);
      // A shorter state of the same conversation is now served by this one, unless it had cuts (exact
      // reuse points) that this one lacks: then it can still serve prompts this one cannot.
      for (const h of [...this.held.values()]) {
        if (h !== added && h.entry.tokens.length < meta.tokens.length && startsWith(meta.tokens, h.entry.tokens)
          && includesAll(meta.cuts, h.entry.cuts)) {
          await this.remove(h);
          this.counts.superseded++;
        }
      }
      await this.evictToBudget();
      return this.held.get(added.entry.id) === added ? added.entry : null;
    });
  }

  /** Loads an entry through `read` after checking its bytes are still the ones written; false when not loaded. */
  load(entry: DiskEntry, read: (path: string) => Promise<void>): Promise<boolean> {
    return this.serial(async () => {
      const h = this.held.get(entry.id);
      // Evicted or superseded since the engine looked it up: a plain miss, not a bad file.
      if (!this.on || !h) return false;
      if (!(await verifyState(this.opts.dir, h.entry.id, h.manifest))) {
        await this.reject(h, "state file changed since it was written (size or sha256)");
        return false;
      }
      try {
        await read(statePath(this.opts.dir, h.entry.id));
      } catch (err) {
        await this.reject(h, `the engine could not load it (${errorCode(err)})`);
        return false;
      }
      await this.touch(h);
      this.counts.hits++;
      return true;
    });
  }

  /** Removes an entry whose conversation goes on in memory; cutBack counts it as trimmed to where it resumed. */
  drop(entry: DiskEntry, cutBack: boolean): Promise<void> {
    return this.serial(async () => {
      const h = this.held.get(entry.id);
      if (!h) return;
      await this.remove(h);
      if (cutBack) this.counts.cutBack++;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn);
  }

  private disable(reason: string): void {
    this.on = false;
    this.reason = reason;
  }

  private async scan(names: string[]): Promise<void> {
    const {dir, identity, logger} = this.opts;
    const ours = names.map((name) => OURS.exec(name)).filter((m) => m !== null);
    const manifests = new Set(ours.filter((m) => !m[3] && m[2] === MANIFEST_SUFFIX).map((m) => m[1]!));
    // A .tmp is a write cut short; a state without a manifest is one cut short between its two renames.
    const leftovers = ours.filter((m) => m[3] || (m[2] === STATE_SUFFIX && !manifests.has(m[1]!))).map((m) => m[0]);
    await Promise.all(leftovers.map((name) => rm(join(dir, name), {force: true}).catch(() => undefined)));
    if (leftovers.length > 0) logger.info("disk tier: removed leftovers of interrupted writes", {dir, files: leftovers.length});
    for (const id of manifests) {
      const result = await readManifest(dir, id, identity);
      if ("rejected" in result) {
        this.counts.rejected++;
        logger.info("disk tier: removed a state file", {id, reason: result.rejected});
        await removeState(dir, id).catch(() => undefined);
      } else {
        this.add(result, id);
      }
    }
    // The order they were last used in earlier runs is the LRU order now.
    const byAge = [...this.held.values()].sort((a, b) => a.entry.lastUsed - b.entry.lastUsed);
    byAge.forEach((h, i) => { h.seq = i; });
    this.nextSeq = byAge.length;
    await this.evictToBudget();
    logger.info("disk tier ready", {dir, entries: this.held.size, bytes: this.total, budget_bytes: this.opts.budgetBytes});
  }

  private add(manifest: StateManifest, id: string): Held {
    const entry: DiskEntry = {id, tokens: manifest.tokens, cuts: manifest.cuts, bytes: manifest.bytes, lastUsed: manifest.lastUsed};
    const h: Held = {entry, manifest, seq: this.nextSeq++};
    this.held.set(id, h);
    this.total += manifest.bytes;
    return h;
  }

  private async remove(h: Held): Promise<void> {
    if (this.held.get(h.entry.id) !== h) return;
    this.held.delete(h.entry.id);
    this.total -= h.entry.bytes;
    // A file that cannot be removed only costs disk space; it is not ours to load any more either way.
    await removeState(this.opts.dir, h.entry.id).catch((err) =>
      this.opts.logger.info("disk tier: could not remove a state file", {id: h.entry.id, error: errorCode(err)}));
  }

  private async reject(h: Held, reason: string): Promise<void> {
    this.counts.rejected++;
    this.opts.logger.info("disk tier: removed a state file", {id: h.entry.id, reason});
    await this.remove(h);
  }

  private async touch(h: Held): Promise<void> {
    await touchManifest(this.opts.dir, h.entry.id, h.manifest);
    h.entry.lastUsed = h.manifest.lastUsed;
    h.seq = this.nextSeq++;
  }

  private async evictToBudget(): Promise<void> {
    while (this.total > this.opts.budgetBytes && this.held.size > 0) {
      let oldest: Held | undefined;
      for (const h of this.held.values()) if (!oldest || older(h, oldest)) oldest = h;
      await this.remove(oldest!);
      this.counts.evicted++;
    }
  }
}
