// Named sessions on remote replicas (SVC_FORK=1 beside SVC_ENGINE). A kept state's KV is not in svc: it is in
// the replica slot that served the reply. What svc keeps under the handle's name (through the usual state files,
// so sizes, checksums, the TTL and the restart index work as in-process) is a small descriptor: which replica
// holds the state and, when that replica runs with --slot-save-path, the file it saved the slot to. A request
// from the session is routed back to that replica; a slot that no longer holds the state (another request
// reused it) loads the file first, and without a file the replica evaluates what it no longer holds.

import {createHash} from "node:crypto";
import {readFile, writeFile} from "node:fs/promises";

export interface RemoteStateDescriptor {
  format: "svc-remote-slot";
  version: 1;
  /** The replica's URL as SVC_ENGINE names it. */
  replica: string;
  /** The file name in the replica's --slot-save-path; null when the replica does not save slots. */
  slotFile: string | null;
  /** Tokens the slot held when it was kept. */
  tokens: number;
}

export function describeState(replica: string, slotFile: string | null, tokens: number): RemoteStateDescriptor {
  return {format: "svc-remote-slot", version: 1, replica, slotFile, tokens};
}

export async function writeDescriptor(path: string, descriptor: RemoteStateDescriptor): Promise<void> {
  await writeFile(path, JSON.stringify(descriptor));
}

/** The descriptor at `path`, or null when it is not one (a state written by another engine, a damaged file). */
export async function readDescriptor(path: string): Promise<RemoteStateDescriptor | null> {
  try {
    const d = JSON.parse(await readFile(path, "utf8")) as Partial<RemoteStateDescriptor>;
    if (d.format !== "svc-remote-slot" || d.version !== 1 || typeof d.replica !== "string" || typeof d.tokens !== "number") return null;
    if (d.slotFile !== null && (typeof d.slotFile !== "string" || !SLOT_FILE.test(d.slotFile))) return null;
    return describeState(d.replica, d.slotFile, d.tokens);
  } catch {
    return null;
  }
}

const SLOT_FILE = /^svc-[0-9a-f]{32}\.bin$/;

/**
 * The slot file for a kept token sequence, named by its content: keeping the same state twice writes one file.
 * llama-server has no route to delete a slot file, so files of released handles stay in --slot-save-path (docs/operations.md,
 * Remote engines, says so); naming by content at least keeps repeats from piling up.
 */
export function slotFileName(tokens: readonly number[]): string {
  return `svc-${createHash("sha256").update(Int32Array.from(tokens)).digest("hex").slice(0, 32)}.bin`;
}
