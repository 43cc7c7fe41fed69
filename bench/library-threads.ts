// The engine library alone: greedy decode tok/s of node-llama-cpp on one sequence with 1 and with 2 threads,
// interleaved, on the default GGUF. It answers "does the library use the second core?", which llama-server
// does (its decode gains from the second thread). Run by hand.
//
//   npx tsx bench/library-threads.ts

import {homedir} from "node:os";
import {join} from "node:path";
import {getLlama, LlamaLogLevel, type Token} from "node-llama-cpp";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {median} from "./llama-server/client.ts";

const PROMPT = "<|im_start|>user\nWrite a long story about a lighthouse keeper who finds a map.<|im_end|>\n<|im_start|>assistant\n";

async function main(): Promise<void> {
  const gguf = (await resolveModel(process.env.SVC_MODEL ?? DEFAULT_MAIN_MODEL_SPEC,
    {modelsDir: process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models"), logger: createLogger("error"), progress: "lines"})).path;
  const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: LlamaLogLevel.error});
  const model = await llama.loadModel({modelPath: gguf, defaultContextFlashAttention: true});
  const tps: Record<number, number[]> = {1: [], 2: []};
  for (let round = 0; round < 3; round++) {
    for (const threads of round % 2 ? [2, 1] : [1, 2]) {
      const context = await model.createContext({sequences: 1, contextSize: 1024, threads: {ideal: threads, min: threads}, flashAttention: true,
        failedCreationRemedy: false});
      const seq = context.getSequence();
      let first = 0;
      let last = 0;
      let n = 0;
      for await (const _ of seq.evaluate(model.tokenize(PROMPT, true) as Token[], {temperature: 0, yieldEogToken: false})) {
        last = performance.now();
        if (first === 0) first = last;
        if (++n >= 128) break;
      }
      tps[threads]!.push(((n - 1) * 1000) / (last - first));
      await context.dispose();
    }
  }
  process.stdout.write(`library decode tok/s (median of 3): 1 thread ${median(tps[1]!).toFixed(1)}, 2 threads ${median(tps[2]!).toFixed(1)}\n`);
  await model.dispose();
  await llama.dispose();
}

void main();
