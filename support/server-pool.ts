// Shared servers. `npm test` (scripts/test.mjs) runs every test file in a process of its own and sets
// TEST_SERVER_POOL to a directory where servers started by sharedServer() are recorded by their settings: the next
// file that asks for the same settings gets the same server instead of paying for a start (tsx, the native
// library, the model load, the vocabulary scan). The runner stops them all when the run ends. A file run alone (no
// pool) owns its server, and its stop() stops it. Only files whose assertions hold on a server that served others
// before may share one; a file that checks a fresh server's counters starts its own with startServer().
//
// The runner runs files two at a time, so a pooled server is leased: the file that took it holds it until its
// process exits, and a second file asking for the same settings meanwhile gets a server of its own. A file never
// sees another file's requests in flight on its server (they would take regions and move its cache counters).

import {spawn} from "node:child_process";
import {createHash} from "node:crypto";
import {closeSync, existsSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync} from "node:fs";
import {join} from "node:path";
import {clientFor, LISTENING, recordStart, ROOT, serverArgs, serverEnv, startServer, withModel, type RunningServer} from "./server.ts";

/** Servers kept alive at once (TEST_POOL_MAX, default 4); the least recently used one that no live file holds is stopped to make room. */
function poolMax(): number {
  return Number(process.env.TEST_POOL_MAX ?? 4);
}

/** One line of the pool index (pool.json); scripts/test.mjs reads the pids from it to stop the servers at the end. */
interface PoolEntry {
  key: string;
  pid: number;
  port: number;
  logFile: string;
  env: Record<string, string>;
  lastUsed: number;
  /** The test file's process that holds the server (0: none yet). */
  holder: number;
}

/**
 * Whether a process still runs. A detached server that died is reaped by whoever adopted it, and where that is a
 * container's init that reaps nothing it stays a zombie, which signal 0 still finds: its state in /proc says so, and
 * the pool must not hand it out (the next file would meet "connection refused").
 */
function alive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (not Linux): signal 0 is all there is
  }
}

/** Held by another file that still runs: neither handed out nor stopped to make room. */
const heldElsewhere = (e: PoolEntry) => e.holder !== process.pid && alive(e.holder);

function poolEntries(dir: string): PoolEntry[] {
  const index = join(dir, "pool.json");
  return existsSync(index) ? (JSON.parse(readFileSync(index, "utf8")) as PoolEntry[]).filter((e) => alive(e.pid)) : [];
}

function savePool(dir: string, entries: PoolEntry[]): void {
  // Written aside, then renamed: the runner may read the index while a file writes it.
  writeFileSync(join(dir, "pool.json.tmp"), JSON.stringify(entries, null, 1));
  renameSync(join(dir, "pool.json.tmp"), join(dir, "pool.json"));
}

/**
 * Runs `fn` holding the pool's lock: two files read, change and write the index in turn. A lock left by a process
 * that died is taken over.
 */
async function withPoolLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(dir, "pool.lock");
  for (;;) {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(readFileSync(lock, "utf8") || 0);
      // An empty file is a lock being written this instant; a dead owner's lock is stale.
      if (owner > 0 && !alive(owner)) unlinkSync(lock);
      else await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    unlinkSync(lock);
  }
}

async function stopPid(pid: number): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, "SIGTERM");
  for (let waited = 0; waited < 10_000 && alive(pid); waited += 50) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, "SIGKILL");
}

function readLines(file: string, fromByte: number): string[] {
  const text = readFileSync(file).subarray(fromByte).toString("utf8");
  const lines = text.split("\n");
  lines.pop();
  return lines;
}

/** A view of a pooled server: its log from `fromByte` on; stop() leaves it running for the next file. */
function pooledView(entry: PoolEntry, fromByte: number): RunningServer {
  const url = `http://127.0.0.1:${entry.port}`;
  const view: RunningServer = {
    url,
    port: entry.port,
    get logs() {
      return readLines(entry.logFile, fromByte);
    },
    client: clientFor(url, entry.env),
    waitForLog: async (re, ms = 30_000) => {
      const deadline = performance.now() + ms;
      for (;;) {
        const hit = view.logs.find((l) => re.test(l));
        if (hit) return hit;
        if (!alive(entry.pid)) throw new Error(`the shared server exited; last lines:\n${view.logs.slice(-10).join("\n")}`);
        if (performance.now() > deadline) throw new Error(`no log line matching ${re} within ${ms} ms; last lines:\n${view.logs.slice(-10).join("\n")}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: async () => {},
  };
  return view;
}

/** Starts a pooled server (detached, logging to a file of the pool) and waits until it listens. */
async function startPooled(dir: string, key: string, env: Record<string, string>, timeoutMs: number): Promise<PoolEntry> {
  const startedAt = performance.now();
  // One log per settings and file: "w", since a server of these settings that this file saw stopped to make room
  // left its log here, and its "listening" line (an old, dead port) would be read as this server's.
  const logFile = join(dir, `${key}-${process.pid}.log`);
  const fd = openSync(logFile, "w");
  const child = spawn(process.execPath, serverArgs(), {cwd: ROOT, env: serverEnv(env), stdio: ["ignore", fd, fd], detached: true});
  closeSync(fd);
  child.unref();
  const entry: PoolEntry = {key, pid: child.pid!, port: 0, logFile, env, lastUsed: Date.now(), holder: process.pid};
  const line = await pooledView(entry, 0).waitForLog(LISTENING, timeoutMs).catch(async (err: Error) => {
    await stopPid(entry.pid);
    throw new Error(`shared server did not start: ${err.message}`);
  });
  entry.port = Number(LISTENING.exec(line)![1]);
  recordStart("shared", startedAt);
  return entry;
}

/**
 * A server with these settings, shared with the other test files of the run that ask for the same settings
 * (see above). Use it only where the file's assertions do not depend on what the server served before.
 */
export async function sharedServer(settings: Record<string, string> = {}, timeoutMs = 180_000): Promise<RunningServer> {
  const env = await withModel(settings);
  const dir = process.env.TEST_SERVER_POOL;
  if (!dir || process.env.TEST_REPLICAS) return startServer(env, timeoutMs);
  // The core share is part of the settings: a one-thread server of the e2e tier is not what a slow file asks for.
  const settingsKey = [...Object.entries(env).sort(([a], [b]) => a.localeCompare(b)), ["cores", process.env.TEST_SHARED_CORES ?? "all"]];
  const key = createHash("sha256").update(JSON.stringify(settingsKey)).digest("hex").slice(0, 16);
  return withPoolLock(dir, async () => {
    const entries = poolEntries(dir);
    let entry = entries.find((e) => e.key === key && !heldElsewhere(e));
    const fresh = !entry;
    if (!entry) {
      // Servers another file holds stay: it is using them. This file's own are stopped as before, least recently used first.
      const spare = entries.filter((e) => !heldElsewhere(e)).sort((a, b) => a.lastUsed - b.lastUsed);
      while (entries.length >= poolMax() && spare.length > 0) {
        const victim = spare.shift()!;
        await stopPid(victim.pid);
        entries.splice(entries.indexOf(victim), 1);
      }
      entry = await startPooled(dir, key, env, timeoutMs);
      entries.push(entry);
    }
    entry.lastUsed = Date.now();
    entry.holder = process.pid;
    savePool(dir, entries);
    // A server this file started shows its whole log (start-up lines included); a reused one, what follows.
    return pooledView(entry, fresh ? 0 : statSync(entry.logFile).size);
  });
}
