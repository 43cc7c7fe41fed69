// Long prompts, where coding agents live: svc against llama-server on the same GGUF, threads and regions, one
// server's turn at a time, interleaved (bench/llama-server/long-prompts-run.ts). For each length: one cold request
// of that many prompt tokens, then a follow-up that adds 16 new tokens after the reply; 8 tokens generated each.
// Prints cold prefill tok/s (the server's own `timings.prompt_per_second`), the decode rate after the long prompt,
// and the follow-up's wall time. bench:vs-llama-server runs the same as its workload (g).
//
//   npm run bench:long-prompts       BENCH_LENGTHS=2000,4000 (default 2000,4000,8000)  BENCH_PARALLEL=4
//   BENCH_SVC_ENV="SVC_PROMPT_PIECE=512;..." adds svc columns with those settings (each ';'-separated set is one column).

import {availableParallelism, homedir} from "node:os";
import {join} from "node:path";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {contextFor, runLongPrompts} from "./llama-server/long-prompts-run.ts";

const LENGTHS = (process.env.BENCH_LENGTHS ?? "2000,4000,8000").split(",").map(Number);
const REGIONS = Number(process.env.BENCH_PARALLEL ?? 4);
const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<void> {
  const logger = createLogger("error");
  const modelsDir = process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models");
  const gguf = (await resolveModel(process.env.SVC_MODEL ?? DEFAULT_MAIN_MODEL_SPEC, {modelsDir, logger, progress: "lines"})).path;
  const build = ensureLlamaServer({log: say});
  const threads = Number(process.env.SVC_THREADS ?? availableParallelism());
  const variants = (process.env.BENCH_SVC_ENV ?? "").split(";").filter(Boolean).map((set) =>
    Object.fromEntries(set.split(",").map((kv) => kv.split("=") as [string, string])));
  say(`bench: ${gguf}, ${threads} threads, ${REGIONS} regions of ${contextFor(LENGTHS)}; llama-server ${build.tag}`);
  const results = await runLongPrompts({gguf, threads, regions: REGIONS, lengths: LENGTHS, variants, llamaServer: build.binary, say});
  const llama = results.get("llama-server")!;
  process.stdout.write("\n| server | prompt | cold prefill tok/s | ratio | decode after it tok/s | ratio | follow-up wall s | ratio |\n" +
    "|---|---|---|---|---|---|---|---|\n");
  for (const [label, byLength] of results) {
    for (const [length, r] of byLength) {
      const l = llama.get(length)!;
      process.stdout.write(`| ${label} | ${r.cold.promptTokens} | ${r.cold.prefillTps.toFixed(1)} | ${(r.cold.prefillTps / l.cold.prefillTps).toFixed(2)} | ` +
        `${r.cold.decodeTps.toFixed(1)} | ${(r.cold.decodeTps / l.cold.decodeTps).toFixed(2)} | ` +
        `${r.follow.wallS.toFixed(2)} | ${(r.follow.wallS / l.follow.wallS).toFixed(2)} |\n`);
    }
  }
}

await main();
