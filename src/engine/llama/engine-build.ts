// Which build of the engine library runs: node-llama-cpp's prebuilt binary (default), or one built once from the
// llama.cpp source it bundles with OpenMP on. The prebuilt binary has no OpenMP, so every decode starts and
// joins a fresh set of worker threads; OpenMP keeps one team alive between decodes. Measured on 2 cores with
// the library alone, one worker thread (UV_THREADPOOL_SIZE=1), 2 threads, a 600-token context: decode 82 tok/s
// prebuilt against 97-104 built, prompt about the same. The build takes about 4 minutes once (cmake and a C++
// compiler needed) and lives in node-llama-cpp's own folder, so `npm ci` starts it over.

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
