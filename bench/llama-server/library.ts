// The third column of bench:vs-llama-server: node-llama-cpp driven directly in this process (one sequence,
// flash attention, greedy), on the same GGUF and threads. It explains losses; it is not the target.

import {getLlama, LlamaLogLevel, type Token} from "node-llama-cpp";

export interface LibraryRun {
  ttftMs: number;
  decodeTps: number;
}

export async function libraryDecode(gguf: string, threads: number, prompts: string[], maxTokens: number): Promise<LibraryRun[]> {
  const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: LlamaLogLevel.error});
  const model = await llama.loadModel({modelPath: gguf, defaultContextFlashAttention: true});
  const context = await model.createContext({sequences: 1, contextSize: 2048, threads: {ideal: threads, min: 1}, flashAttention: true,
    failedCreationRemedy: false});
  const seq = context.getSequence();
  const out: LibraryRun[] = [];
  try {
    for (const text of prompts) {
      await seq.clearHistory();
      const tokens = model.tokenize(text, true) as Token[];
      const start = performance.now();
      let first = 0;
      let last = 0;
      let n = 0;
      for await (const t of seq.evaluate(tokens, {temperature: 0, yieldEogToken: false})) {
        void t;
        last = performance.now();
        if (first === 0) first = last;
        if (++n >= maxTokens) break;
      }
      out.push({ttftMs: first - start, decodeTps: n > 1 ? ((n - 1) * 1000) / (last - first) : NaN});
    }
  } finally {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }
  return out;
}
