// What a KV state file must match to be loaded: the model file, the engine build and the KV layout.
// llama.cpp checks shapes on load but not weights, so a state from another model of the same shape would
// load silently and give garbage; this identity is written in every state's manifest and compared.

import {stat} from "node:fs/promises";
import type {StateIdentity} from "../kv/state-files.ts";
import {engineIdentity, type EngineBuild} from "./engine-build.ts";

export async function stateIdentity(modelPath: string, sha256: string | null, contextSize: number, flashAttention: boolean,
  build: EngineBuild = "prebuilt"): Promise<StateIdentity> {
  // A local model is not hashed at start (it may be large); its size and modification time stand in.
  let model = sha256 ? `sha256:${sha256}` : modelPath;
  if (!sha256) {
    const st = await stat(modelPath);
    model = `${modelPath}|${st.size}|${Math.floor(st.mtimeMs)}`;
  }
  return {
    model,
    engine: engineIdentity(build),
    // SVC_FLASH_ATTENTION; a state written with flash attention on has its V transposed differently (and
    // its numbers differ, so a resumed reply would not be the one a cold run gives).
    kv: `f16/f16, flash attention ${flashAttention ? "on" : "off"}`,
    positions_per_region: String(contextSize),
  };
}
