// Which build of the engine library runs: node-llama-cpp's prebuilt binary (default), or one built once from the
// llama.cpp source it bundles, with OpenMP on and tuned for this CPU. The prebuilt binary has no OpenMP: every
// decode hands its graph to a short-lived ggml worker pool. What that costs was measured twice on these shared
// 2-core machines, library alone, one libuv worker, 2 threads: one session found the build 20% faster (97-104 vs
// 82 tok/s); a later one found no difference (medians about 73 tok/s each, interleaved), and attaching a
// persistent ggml threadpool to the prebuilt binary (an LD_PRELOAD experiment, not shipped) changed nothing
// either, so thread start-up is not where a decode's time goes. The build takes about 5 minutes (cmake and a C++
// compiler needed); engine-build-store.ts keeps it in the models directory so `npm ci` does not start it over.

import {execFileSync} from "node:child_process";
import type {LlamaOptions} from "node-llama-cpp";
import {PINNED_NODE_LLAMA_CPP} from "./internals.ts";

export type EngineBuild = "prebuilt" | "openmp";

/** Raised before a source build that cannot work here; says what to install. */
export class EngineBuildError extends Error {}

function has(cmd: string): boolean {
  try {
    execFileSync(cmd, ["--version"], {stdio: "ignore"});
    return true;
  } catch {
    return false;
  }
}

/** getLlama options for the chosen build; for `openmp`, checks the tools a first build needs. */
export function llamaBuildOptions(build: EngineBuild): Pick<LlamaOptions, "build" | "usePrebuiltBinaries" | "cmakeOptions" | "progressLogs"> {
  if (build === "prebuilt") return {build: "never"};
  const missing = [["cmake", "cmake"], ["c++", "g++"]].filter(([cmd]) => !has(cmd!)).map(([, pkg]) => pkg!);
  if (missing.length > 0) {
    throw new EngineBuildError(`SVC_ENGINE_BUILD=openmp builds the engine from source and needs ${missing.join(" and ")} ` +
      `(Debian/Ubuntu: apt install ${missing.join(" ")}); or leave SVC_ENGINE_BUILD unset for the prebuilt engine`);
  }
  // "auto" without prebuilt binaries: the local build when it exists, else build it now (node-llama-cpp prints its progress).
  return {build: "auto", usePrebuiltBinaries: false, cmakeOptions: {GGML_OPENMP: "ON"}, progressLogs: true};
}

/** The engine part of a KV state's identity: another build may round differently, so its states are not loaded. */
export function engineIdentity(build: EngineBuild): string {
  return build === "prebuilt" ? `node-llama-cpp ${PINNED_NODE_LLAMA_CPP}` : `node-llama-cpp ${PINNED_NODE_LLAMA_CPP}, built from source with OpenMP`;
}
