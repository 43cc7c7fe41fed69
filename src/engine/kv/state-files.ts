// KV state files on disk: the engine's own state file (llama.cpp's `ggsq` sequence state, written and read
// by node-llama-cpp) plus a JSON manifest beside it. llama.cpp checks shapes when it loads a state but not
// which model or build wrote it, and a truncated or flipped byte would load as garbage KV. So nothing is
// loaded unless its manifest names this exact model and engine (identity), its size matches, and its
// sha256 matches. Files are written under a temporary name and renamed, so a crash never leaves a
// half-written state under a real name. Used by the disk tier and by session handles.

import {createHash, randomBytes} from "node:crypto";
import {createReadStream} from "node:fs";
import {readFile, rename, rm, stat, writeFile} from "node:fs/promises";
import {join} from "node:path";

/** Everything that must match for a state to be loadable: model file, engine build, KV layout. */
export type StateIdentity = Record<string, string>;

export interface StateManifest {
  format: 1;
  identity: StateIdentity;
  /** The tokens whose KV the state holds. */
  tokens: number[];
  /** Piece ends of the exact part of the KV (see region-memory.ts); the last one is its length. */
  cuts: number[];
  bytes: number;
  sha256: string;
  /** Epoch ms. */
  created: number;
  lastUsed: number;
  /** What wrote it (a handle name, "disk-tier"). */
  label: string;
  /** Where the sealed reply in the state starts (the prompt length of the request that wrote it); 0 if none. */
  replyStart: number;
  /**
   * Where that request's last client text ended (before the template's reply header): what a later request must
   * repeat to start from the state. Absent in older manifests and states without a reply.
   */
  historyEnd?: number;
}

export const STATE_SUFFIX = ".ggsq";
export const MANIFEST_SUFFIX = ".json";

export function statePath(dir: string, id: string): string {
  return join(dir, id + STATE_SUFFIX);
}

export function manifestPath(dir: string, id: string): string {
  return join(dir, id + MANIFEST_SUFFIX);
}

export function newStateId(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

function sameIdentity(a: StateIdentity, b: StateIdentity): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

/**
 * Writes a state: `write(path)` produces the state file (the engine's save), then the file is hashed and
 * the manifest written. Throws what the file system throws (ENOSPC, EACCES); the caller decides what a
 * failure means. Nothing is left behind on failure.
 */
export async function writeState(dir: string, id: string,
  meta: {tokens: readonly number[]; cuts: readonly number[]; label: string; replyStart?: number; historyEnd?: number},
  identity: StateIdentity, write: (path: string) => Promise<void>): Promise<StateManifest> {
  const tmpState = statePath(dir, id) + ".tmp";
  const tmpManifest = manifestPath(dir, id) + ".tmp";
  try {
    await write(tmpState);
    const {size} = await stat(tmpState);
    const now = Date.now();
    const manifest: StateManifest = {format: 1, identity, tokens: [...meta.tokens], cuts: [...meta.cuts], bytes: size,
      sha256: await sha256File(tmpState), created: now, lastUsed: now, label: meta.label, replyStart: meta.replyStart ?? 0,
      ...(meta.historyEnd !== undefined ? {historyEnd: meta.historyEnd} : {})};
    await writeFile(tmpManifest, JSON.stringify(manifest));
    await rename(tmpState, statePath(dir, id));
    await rename(tmpManifest, manifestPath(dir, id));
    return manifest;
  } catch (err) {
    await Promise.all([rm(tmpState, {force: true}), rm(tmpManifest, {force: true}), rm(statePath(dir, id), {force: true})]);
    throw err;
  }
}

function isManifest(x: unknown): x is StateManifest {
  const m = x as StateManifest;
  return typeof m === "object" && m !== null && m.format === 1 && typeof m.identity === "object" && m.identity !== null
    && Array.isArray(m.tokens) && m.tokens.every((t) => Number.isInteger(t) && t >= 0)
    && Array.isArray(m.cuts) && m.cuts.every((c) => Number.isInteger(c) && c > 0 && c <= m.tokens.length)
    && Number.isInteger(m.bytes) && typeof m.sha256 === "string" && typeof m.created === "number" && typeof m.lastUsed === "number"
    && typeof m.label === "string" && Number.isInteger(m.replyStart) && m.replyStart >= 0 && m.replyStart <= m.tokens.length;
}

/**
 * Reads and checks a manifest without reading the state: well-formed, same identity, state file present
 * with the recorded size. Returns the reason when it does not pass (the caller removes the pair).
 */
export async function readManifest(dir: string, id: string, identity: StateIdentity): Promise<StateManifest | {rejected: string}> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(manifestPath(dir, id), "utf8"));
  } catch {
    return {rejected: "manifest unreadable or not JSON"};
  }
  if (!isManifest(parsed)) return {rejected: "manifest malformed"};
  if (!sameIdentity(parsed.identity, identity)) return {rejected: "written by another model or engine build"};
  let size: number;
  try {
    size = (await stat(statePath(dir, id))).size;
  } catch {
    return {rejected: "state file missing"};
  }
  if (size !== parsed.bytes) return {rejected: `state file is ${size} bytes, manifest says ${parsed.bytes} (truncated?)`};
  return parsed;
}

/** Whether the state file still has the bytes its manifest recorded (checked right before every load). */
export async function verifyState(dir: string, id: string, manifest: StateManifest): Promise<boolean> {
  try {
    const {size} = await stat(statePath(dir, id));
    return size === manifest.bytes && (await sha256File(statePath(dir, id))) === manifest.sha256;
  } catch {
    return false;
  }
}

/** Updates lastUsed in the manifest (best effort: a failure only loses recency). */
export async function touchManifest(dir: string, id: string, manifest: StateManifest): Promise<void> {
  manifest.lastUsed = Date.now();
  const tmp = manifestPath(dir, id) + ".tmp";
  try {
    await writeFile(tmp, JSON.stringify(manifest));
    await rename(tmp, manifestPath(dir, id));
  } catch {
    await rm(tmp, {force: true});
  }
}

export async function removeState(dir: string, id: string): Promise<void> {
  await Promise.all([rm(statePath(dir, id), {force: true}), rm(manifestPath(dir, id), {force: true}),
    rm(statePath(dir, id) + ".tmp", {force: true}), rm(manifestPath(dir, id) + ".tmp", {force: true})]);
}
