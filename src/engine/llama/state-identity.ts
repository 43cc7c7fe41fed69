// What a KV state file must match to be loaded: the model file, the engine build and the KV layout.
// llama.cpp checks shapes on load but not weights, so a state from another model of the same shape would
// load silently and give garbage; this identity is written in every state's manifest and compared.

import {stat} from "node:fs/promises";
import type {StateIdentity} from "../kv/state-files.ts";
import {engineIdentity, type EngineBuild} from "./engine-build.ts";

/** The model file: its sha256, or for a local model (not hashed at start, it may be large) its path, size and modification time. */
export async function modelIdentity(modelPath: string, sha256: string | null): Promise<string> {
  if (sha256) return `sha256:${sha256}`;
  const st = await stat(modelPath);
  return `${modelPath}|${st.size}|${Math.floor(st.mtimeMs)}`;
}

export async function stateIdentity(modelPath: string, sha256: string | null, contextSize: number, flashAttention: boolean,
  build: EngineBuild = "prebuilt", threads = 1): Promise<StateIdentity> {
  return {
    model: await modelIdentity(modelPath, sha256),
    engine: engineIdentity(build),
    // SVC_FLASH_ATTENTION; a state written with flash attention on has its V transposed differently (and
    // its numbers differ, so a resumed reply would not be the one a cold run gives).
    // SVC_THREADS: a one-row evaluation far into a region runs on every thread and takes attention's split path,
    // whose rounding depends on the thread count (kv/row-classes.ts, "split" rows); a reply's decoded rows are such.
    kv: `f16/f16, flash attention ${flashAttention ? "on" : "off"}, split rows on ${threads} threads`,
    positions_per_region: String(contextSize),
  };
}
