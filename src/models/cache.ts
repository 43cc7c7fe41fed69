// The model cache on disk. Two promises hold for every file at a final path: it arrived completely (it
// is only ever renamed into place after the last byte was written, hashed and checked), and its sidecar,
// when size and mtime still match, tells its sha256 without reading gigabytes at every start.

import {createHash, randomBytes} from "node:crypto";
import {createReadStream} from "node:fs";
import {mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile} from "node:fs/promises";
import {basename, dirname, join} from "node:path";
import type {Logger} from "../observability/log.ts";
import {startProgress, type ProgressMode} from "./progress.ts";

export interface Sidecar {sha256: string; size: number; mtimeMs: number; source: string}

/** A fetch failed in a way the user should read; `reason` is short enough for a "Tried:" list. */
export class FetchFailure extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface Expectation {sha256: string; from: string}

export interface ProgressContext {logger: Logger; progress?: ProgressMode}

const GGUF_MAGIC = Buffer.from("GGUF", "latin1");
// Hashing a small file is instant; only files this large are worth a progress display.
const HASH_PROGRESS_MIN = 64 * 1024 * 1024;
const HEX64 = /^[0-9a-f]{64}$/;

export const sidecarPath = (file: string) => `${file}.sha256.json`;

export function normalizeSha(s: string): string | null {
  const v = s.trim().replace(/^W\//, "").replace(/^"|"$/g, "").toLowerCase();
  return HEX64.test(v) ? v : null;
}

export async function statOrNull(p: string) {
  try {
    return await stat(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return null;
    throw e;
  }
}

export async function hasGgufMagic(file: string): Promise<boolean> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(4);
    const {bytesRead} = await fh.read(buf, 0, 4, 0);
    return bytesRead === 4 && buf.equals(GGUF_MAGIC);
  } finally {
    await fh.close();
  }
}

export async function hashFile(file: string, ctx: ProgressContext): Promise<string> {
  const size = (await stat(file)).size;
  const reporter = size >= HASH_PROGRESS_MIN
    ? startProgress({label: `hashing ${basename(file)}`, total: size, mode: ctx.progress, logger: ctx.logger})
    : null;
  const hash = createHash("sha256");
  let done = 0;
  try {
    for await (const chunk of createReadStream(file, {highWaterMark: 1024 * 1024})) {
      hash.update(chunk as Buffer);
      done += (chunk as Buffer).length;
      reporter?.update(done);
    }
  } catch (e) {
    reporter?.stop();
    throw e;
  }
  reporter?.finish();
  return hash.digest("hex");
}

async function readSidecar(file: string): Promise<Sidecar | null> {
  try {
    const v = JSON.parse(await readFile(sidecarPath(file), "utf8")) as Partial<Sidecar>;
    if (typeof v.sha256 !== "string" || !HEX64.test(v.sha256)) return null;
    if (typeof v.size !== "number" || typeof v.mtimeMs !== "number") return null;
    return {sha256: v.sha256, size: v.size, mtimeMs: v.mtimeMs, source: String(v.source ?? "")};
  } catch {
    return null; // missing or unreadable sidecar just means "hash the file again"
  }
}

// The sidecar goes through its own temp file so a crash never leaves a half-written JSON behind.
export async function writeSidecar(file: string, data: Sidecar): Promise<void> {
  const tmp = `${sidecarPath(file)}.part-${process.pid}-${randomBytes(4).toString("hex")}`;
  await writeFile(tmp, JSON.stringify(data) + "\n");
  await rename(tmp, sidecarPath(file));
}

export async function removeCached(file: string): Promise<void> {
  await rm(file, {force: true});
  await rm(sidecarPath(file), {force: true});
}

export type CacheState =
  | {state: "absent"}
  | {state: "ok"; sha256: string}
  | {state: "bad"; reason: string};

/**
 * Looks at a cached file. "bad" means it is there but unusable (not GGUF, or not the known hash); the
 * caller decides whether to delete it (our own download) or to stop (a file the user put there).
 */
export async function checkCached(file: string, source: string, known: string | undefined,
  ctx: ProgressContext): Promise<CacheState> {
  const st = await statOrNull(file);
  if (!st) return {state: "absent"};
  if (!st.isFile()) return {state: "bad", reason: "not a regular file"};
  if (!(await hasGgufMagic(file))) return {state: "bad", reason: "not a GGUF file"};
  const sc = await readSidecar(file);
  const trusted = sc !== null && sc.size === st.size && sc.mtimeMs === st.mtimeMs;
  const sha = trusted ? sc.sha256 : await hashFile(file, ctx);
  if (known && sha !== known) return {state: "bad", reason: `sha256 ${sha} differs from the known ${known}`};
  if (!trusted) await writeSidecar(file, {sha256: sha, size: st.size, mtimeMs: st.mtimeMs, source});
  return {state: "ok", sha256: sha};
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else, so its download may still be running.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes `<prefix>-<pid>-*` entries left by runs that died mid-fetch. Entries of live processes stay:
 * another svc may be fetching the same file right now, and deleting its part would only waste its work.
 */
export async function removeStale(dir: string, prefix: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(`${prefix}-`)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(prefix.length + 1))?.[1]);
    if (Number.isInteger(pid) && pid > 0 && (pid === process.pid || pidAlive(pid))) continue;
    await rm(join(dir, name), {recursive: true, force: true});
  }
}

export interface WriteOptions extends ProgressContext {
  source: string;
  /** Hashes the content must have; each names where it came from for the error message. */
  expect: Expectation[];
  /** Expected byte count (Content-Length), when known. */
  total: number | null;
  label: string;
  /** Runs after the last byte and before the rename; throwing cancels the commit (e.g. producer failed). */
  beforeCommit?: () => Promise<void>;
}

/**
 * Streams `chunks` into `<final>.part-<pid>-<random>`, hashing and checking the GGUF magic on the way,
 * and only renames it to `final` when everything checks out. On any failure the part file is removed.
 */
export async function writeAtomically(final: string, chunks: AsyncIterable<Uint8Array>,
  opts: WriteOptions): Promise<{sha256: string; size: number}> {
  await mkdir(dirname(final), {recursive: true});
  await removeStale(dirname(final), `${basename(final)}.part`);
  const part = `${final}.part-${process.pid}-${randomBytes(4).toString("hex")}`;
  const fh = await open(part, "wx");
  const hash = createHash("sha256");
  const head: number[] = [];
  let size = 0;
  let closed = false;
  const reporter = startProgress({label: opts.label, total: opts.total, mode: opts.progress, logger: opts.logger});
  try {
    for await (const chunk of chunks) {
      if (head.length < 4) {
        for (const b of chunk.subarray(0, 4 - head.length)) head.push(b);
        // Failing on the first bytes avoids downloading a multi-GB HTML error page to the end.
        if (head.length === 4 && !Buffer.from(head).equals(GGUF_MAGIC)) throw notGguf(head);
      }
      hash.update(chunk);
      await fh.write(chunk);
      size += chunk.length;
      reporter.update(size);
    }
    if (head.length < 4) throw notGguf(head);
    if (opts.total !== null && size !== opts.total) {
      throw new FetchFailure(`incomplete: got ${size} of ${opts.total} bytes`);
    }
    await opts.beforeCommit?.();
    const sha256 = hash.digest("hex");
    for (const e of opts.expect) {
      if (e.sha256 !== sha256) {
        throw new FetchFailure(`sha256 mismatch: expected ${e.sha256} (${e.from}), got ${sha256}; the download was deleted`);
      }
    }
    await fh.sync();
    await fh.close();
    closed = true;
    await rename(part, final);
    const st = await stat(final);
    await writeSidecar(final, {sha256, size: st.size, mtimeMs: st.mtimeMs, source: opts.source});
    reporter.finish();
    return {sha256, size};
  } catch (e) {
    reporter.stop();
    if (!closed) await fh.close().catch(() => undefined);
    await unlink(part).catch(() => undefined);
    throw e;
  }
}

function notGguf(head: number[]): FetchFailure {
  const shown = JSON.stringify(Buffer.from(head).toString("latin1"));
  return new FetchFailure(`not a GGUF file (starts with ${shown}, expected "GGUF")`);
}
