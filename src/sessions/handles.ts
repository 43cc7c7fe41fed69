// Named session handles (SVC_FORK=1): a name maps to a kept KV state written through state-files.ts. Names never
// become file names (each state gets a random id), so any name the header rule allows is safe on disk. With a
// persistent dir the name → id map is kept in handles.json (tmp + rename on every change) so live handles survive
// a restart; without one a temp dir is used and removed on close.
// A name in use by a request (begin → release) is never removed under it: TTL sweeps skip it, a DELETE only hides
// it (released at release()), and a state replaced by keep() stays on disk while another request may be loading it.

import {mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {Logger} from "../observability/log.ts";
import {newStateId, readManifest, removeState, statePath, verifyState, writeState, type StateIdentity,
  type StateManifest} from "../engine/index.ts";

export interface HandleRegistryOptions {
  /** `<SVC_CACHE_DIR>/handles`, or null for a temp dir (handles then die with the process). */
  dir: string | null;
  maxHandles: number; ttlS: number; identity: StateIdentity; logger: Logger; now?: () => number;
}

export interface FoundHandle {
  name: string; tokens: readonly number[]; cuts: readonly number[];
  /** Where the kept reply starts. */
  replyStart: number;
  /** Where the kept request's last client text ended: the history a request must repeat to start from this state. */
  historyEnd: number | null;
  /** The state file for the engine to load. */
  path: string;
  /** Re-hashes the state right before a load; a mismatch releases the handle (logged) and returns false. */
  verify(): Promise<boolean>;
}

export interface HandleListing {name: string; tokens: number; bytes: number; last_used: string; expires_in_s: number; in_use: boolean}

export interface HandleTicket {
  /** "ok": the reply's end state may be kept under the name; "full": no room, answer as ordinary; null: no keep asked. */
  keep: "ok" | "full" | null;
  /** Ends the request's use of its names; idempotent. Call it after keep(). */
  release(): void;
}

interface Handle {name: string; id: string; manifest: StateManifest; lastUsed: number}

const INDEX_FILE = "handles.json";
/** What newStateId() makes; anything else in the index is not trusted as a path part. */
const ID_PATTERN = /^[0-9a-z]+-[0-9a-f]{12}$/;
const STATE_FILE = /^([0-9a-z]+-[0-9a-f]{12})\.(ggsq|json)(\.tmp)?$/;

function bump(map: Map<string, number>, key: string, by: 1 | -1): number {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
  return n;
}

export class HandleRegistry {
  private readonly live = new Map<string, Handle>();
  /** New names promised to running requests (name → requests), counted toward the limit until kept. */
  private readonly reserved = new Map<string, number>();
  private readonly uses = new Map<string, number>();
  /** States no longer reachable by name but maybe being loaded: removed when their name is no longer in use. */
  private readonly doomed = new Map<string, Handle[]>();
  private readonly background = new Set<Promise<unknown>>();
  /** Keeps of replies already answered whose states are still being sealed and written. */
  private readonly answered = new Set<Promise<unknown>>();
  private indexChain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  private constructor(readonly dir: string, readonly persistent: boolean, readonly maxHandles: number, private readonly ttlMs: number,
    private readonly identity: StateIdentity, private readonly logger: Logger, private readonly now: () => number) {}

  static async open(opts: HandleRegistryOptions): Promise<HandleRegistry> {
    const now = opts.now ?? Date.now;
    let dir: string | null = null;
    if (opts.dir !== null) {
      try {
        await mkdir(opts.dir, {recursive: true});
        // Fail now rather than on the first keep: a dir we cannot write would lose every handle.
        const probe = join(opts.dir, `.probe-${process.pid}`);
        await writeFile(probe, "");
        await rm(probe, {force: true});
        dir = opts.dir;
      } catch (err) {
        opts.logger.warn("session handles cannot use their directory; they will work but not survive a restart "
          + "(make the directory writable or point SVC_CACHE_DIR elsewhere)", {dir: opts.dir, error: (err as Error).message});
      }
    }
    const persistent = dir !== null;
    if (dir === null) {
      try {
        dir = await mkdtemp(join(tmpdir(), "svc-handles-"));
      } catch (err) {
        // Never fail startup over sessions: keeps will fail (logged) and requests are answered as ordinary.
        opts.logger.error("session handles have no directory; nothing will be kept", {error: (err as Error).message});
        dir = join(tmpdir(), `svc-handles-unavailable-${process.pid}`);
      }
    }
    const reg = new HandleRegistry(dir, persistent, opts.maxHandles, opts.ttlS * 1000, opts.identity, opts.logger, now);
    if (persistent) await reg.restore();
    const everyMs = Math.min(opts.ttlS / 4, 30) * 1000;
    reg.timer = setInterval(() => reg.sweep(), everyMs);
    reg.timer.unref();
    return reg;
  }

  /** Reads handles.json, keeps what still checks out, and removes every state file nothing refers to. */
  private async restore(): Promise<void> {
    let entries: [string, unknown][] = [];
    try {
      const parsed = JSON.parse(await readFile(join(this.dir, INDEX_FILE), "utf8")) as {format?: unknown; handles?: unknown};
      if (parsed?.format !== 1 || typeof parsed.handles !== "object" || parsed.handles === null) throw new Error("not a handle index");
      entries = Object.entries(parsed.handles);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        this.logger.warn("session handle index unreadable; starting with no handles", {dir: this.dir, error: (err as Error).message});
      }
    }
    const now = this.now();
    for (const [name, raw] of entries) {
      const {id, lastUsed: last} = (raw ?? {}) as {id?: unknown; lastUsed?: unknown};
      if (typeof id !== "string" || !ID_PATTERN.test(id) || typeof last !== "number") {
        this.logger.warn("session handle dropped at restore: bad index entry", {name});
        continue;
      }
      const lastUsed = Math.min(last, now);
      const manifest = now - lastUsed >= this.ttlMs ? null : await readManifest(this.dir, id, this.identity);
      if (manifest === null) this.logger.info("session handle released: unused past SVC_FORK_TTL_S", {name});
      else if ("rejected" in manifest) this.logger.warn("session handle dropped at restore", {name, reason: manifest.rejected});
      else this.live.set(name, {name, id, manifest, lastUsed});
    }
    const kept = new Set([...this.live.values()].map((h) => h.id));
    for (const file of await readdir(this.dir).catch(() => [] as string[])) {
      const m = STATE_FILE.exec(file);
      if ((m && !kept.has(m[1]!)) || file === INDEX_FILE + ".tmp") await rm(join(this.dir, file), {force: true});
    }
    if (this.live.size > 0) this.logger.info("session handles restored", {count: this.live.size, dir: this.dir});
    this.saveIndex();
  }

  private saveIndex(): void {
    if (!this.persistent) return;
    const handles: Record<string, {id: string; lastUsed: number}> = {};
    for (const h of this.live.values()) handles[h.name] = {id: h.id, lastUsed: h.lastUsed};
    const text = JSON.stringify({format: 1, handles});
    const path = join(this.dir, INDEX_FILE);
    // Chained so an older snapshot never lands after a newer one.
    this.indexChain = this.indexChain.then(async () => {
      try {
        await writeFile(path + ".tmp", text);
        await rename(path + ".tmp", path);
      } catch (err) {
        this.logger.warn("session handle index not written; handles may not survive a restart", {error: (err as Error).message});
      }
    });
    this.track(this.indexChain);
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  private remove(h: Handle): void {
    this.track(removeState(this.dir, h.id).catch((err) =>
      this.logger.warn("session handle files not removed", {name: h.name, error: (err as Error).message})));
  }

  private inUse(name: string): boolean {
    return (this.uses.get(name) ?? 0) > 0;
  }

  private doom(h: Handle): void {
    this.doomed.set(h.name, [...(this.doomed.get(h.name) ?? []), h]);
  }

  lookup(name: string): FoundHandle | null {
    this.sweep();
    const h = this.live.get(name);
    if (!h) return null;
    h.lastUsed = this.now();
    this.saveIndex();
    return {name, tokens: h.manifest.tokens, cuts: h.manifest.cuts, replyStart: h.manifest.replyStart,
      historyEnd: h.manifest.historyEnd ?? null, path: statePath(this.dir, h.id), verify: async () => {
      if (await verifyState(this.dir, h.id, h.manifest)) return true;
      this.logger.warn("session handle released: its state file no longer matches its manifest", {name});
      if (this.live.get(name) === h) this.delete(name);
      return false;
    }};
  }

  begin(names: {keep?: string; from?: string}): HandleTicket {
    this.sweep();
    let keep: HandleTicket["keep"] = null;
    let reservedName: string | null = null;
    const used = new Set<string>();
    if (names.from !== undefined) used.add(names.from);
    if (names.keep !== undefined) {
      const name = names.keep;
      if (this.live.has(name)) keep = "ok";
      else if (this.reserved.has(name) || this.live.size + [...this.reserved.keys()].filter((n) => !this.live.has(n)).length
        < this.maxHandles) {
        keep = "ok";
        reservedName = name;
        bump(this.reserved, name, 1);
      } else keep = "full";
      if (keep === "ok") used.add(name);
    }
    for (const name of used) bump(this.uses, name, 1);
    let done = false;
    return {keep, release: () => {
      if (done) return;
      done = true;
      if (reservedName !== null) bump(this.reserved, reservedName, -1);
      for (const name of used) this.endUse(name);
      this.saveIndex();
    }};
  }

  private endUse(name: string): void {
    if (bump(this.uses, name, -1) > 0) return;
    // The end of a request counts as use, so a long request does not leave a handle that expires at once.
    const h = this.live.get(name);
    if (h) h.lastUsed = this.now();
    for (const d of this.doomed.get(name) ?? []) this.remove(d);
    this.doomed.delete(name);
  }

  /** Keeps the reply's end state under `name` (which begin() said "ok" to); false when nothing was kept (logged). */
  async keep(name: string, meta: {tokens: readonly number[]; cuts: readonly number[]; replyStart?: number; historyEnd?: number},
    write: (path: string) => Promise<void>): Promise<boolean> {
    if (this.closed || (!this.live.has(name) && !this.reserved.has(name))) {
      this.logger.info("session handle not kept: released or never reserved", {name});
      return false;
    }
    const id = newStateId();
    let manifest: StateManifest;
    try {
      manifest = await writeState(this.dir, id, {...meta, label: name}, this.identity, write);
    } catch (err) {
      this.logger.warn("session handle not kept: writing its state failed", {name, error: (err as Error).message});
      return false;
    }
    const old = this.live.get(name);
    if (this.closed || (!old && !this.reserved.has(name))) {
      // Deleted (or expired) while the state was being written: do not bring it back.
      await removeState(this.dir, id);
      this.logger.info("session handle not kept: released while its state was written", {name});
      return false;
    }
    this.live.set(name, {name, id, manifest, lastUsed: this.now()});
    this.saveIndex();
    // Another request may be loading the old state: with more than the keeper's own use, wait for them.
    if (old && (this.uses.get(name) ?? 0) > 1) this.doom(old);
    else if (old) this.remove(old);
    this.logger.info(old ? "session handle replaced" : "session handle kept", {name, tokens: meta.tokens.length, bytes: manifest.bytes});
    return true;
  }

  delete(name: string): "released" | "pending" | "unknown" {
    const h = this.live.get(name);
    if (!h) return "unknown";
    this.live.delete(name);
    this.saveIndex();
    if (!this.inUse(name)) this.remove(h);
    else this.doom(h);
    return this.inUse(name) ? "pending" : "released";
  }

  list(): HandleListing[] {
    this.sweep();
    const now = this.now();
    return [...this.live.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((h) => ({
      name: h.name, tokens: h.manifest.tokens.length, bytes: h.manifest.bytes, last_used: new Date(h.lastUsed).toISOString(),
      expires_in_s: Math.max(0, Math.ceil((h.lastUsed + this.ttlMs - now) / 1000)), in_use: this.inUse(h.name),
    }));
  }

  /** Releases handles unused for SVC_FORK_TTL_S; a handle in use waits for its request to end. */
  sweep(): void {
    const now = this.now();
    let changed = false;
    for (const h of [...this.live.values()]) {
      if (this.inUse(h.name) || now - h.lastUsed < this.ttlMs) continue;
      this.live.delete(h.name);
      this.remove(h);
      changed = true;
      this.logger.info("session handle released: unused past SVC_FORK_TTL_S", {name: h.name});
    }
    if (changed) this.saveIndex();
  }

  /**
   * A reply with an accepted keep has been answered; `written` settles when its state is kept (or not). The
   * listing waits for these, so a handle is listed as soon as the client has its reply.
   */
  noteAnswered(written: Promise<unknown>): void {
    const p = written.catch(() => undefined);
    this.answered.add(p);
    void p.finally(() => this.answered.delete(p));
  }

  /** Waits (at most `maxMs`) for the keeps of replies already answered; then list() shows them. */
  async keepsSettled(maxMs = 30_000): Promise<void> {
    if (this.answered.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)));
    await Promise.race([Promise.allSettled([...this.answered]), bound]);
    clearTimeout(timer);
  }

  /** Waits for background file work (index writes, removals); for tests and shutdown. */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.saveIndex();
    await this.settled();
    if (!this.persistent) await rm(this.dir, {recursive: true, force: true}).catch(() => undefined);
  }
}
