// The default main model, loaded in-process for the tests that drive node-llama-cpp directly.

import {availableParallelism, homedir} from "node:os";
import {join} from "node:path";
import {after, before} from "node:test";
import {getLlama, type Llama, type LlamaModel} from "node-llama-cpp";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../src/models/known-files.ts";
import {resolveModel} from "../../src/models/resolve.ts";
import {createMemoryLogger} from "../../src/observability/log.ts";

export async function loadDefaultModel(): Promise<{llama: Llama; model: LlamaModel}> {
  const resolved = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: join(homedir(), ".cache", "svc", "models"), logger: createMemoryLogger(), progress: "lines"});
  const llama = await getLlama({gpu: false, build: "never", maxThreads: availableParallelism()});
  return {llama, model: await llama.loadModel({modelPath: resolved.path})};
}

/** Loads the default model before the file's tests and disposes of it after them; read `.llama` and `.model` inside tests. */
export function useDefaultModel(): {llama: Llama; model: LlamaModel} {
  const loaded = {} as {llama: Llama; model: LlamaModel};
  before(async () => {
    Object.assign(loaded, await loadDefaultModel());
  });
  after(async () => {
    await loaded.model?.dispose();
    await loaded.llama?.dispose();
  });
  return loaded;
}
