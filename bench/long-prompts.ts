// Long prompts, where coding agents live: svc against llama-server on the same GGUF, threads and regions, one
// server's turn at a time, interleaved. For each length: one cold request of that many prompt tokens, then a
// follow-up that adds 16 new tokens after the reply; 8 tokens generated each. Prints cold prefill tok/s (the
// server's own `timings.prompt_per_second`), the decode rate after the long prompt, and the follow-up's wall time.
//
//   npm run bench:long-prompts       BENCH_LENGTHS=2000,4000 (default 2000,4000,8000)  BENCH_PARALLEL=4
//   BENCH_SVC_ENV="SVC_PROMPT_PIECE=512;..." adds svc columns with those settings (each ';'-separated set is one column).

import {availableParallelism, homedir} from "node:os";
import {join} from "node:path";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../support/llama-server/servers.ts";

const LENGTHS = (process.env.BENCH_LENGTHS ?? "2000,4000,8000").split(",").map(Number);
const REGIONS = Number(process.env.BENCH_PARALLEL ?? 4);
const say = (line: string) => process.stderr.write(`${line}\n`);

const WORDS = ("the module reads a request, checks each field against the schema, and returns an error that names the field " +
  "when a value is missing or has the wrong type; otherwise it builds the reply from the cache, the session and the model").split(" ");

/** A document of about `tokens` tokens (SmolLM2's tokenizer: ~1.25 tokens per word here), numbered so no two lines repeat. */
function document(tokens: number, salt: string): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < tokens; i++) {
    const line = `${salt} line ${i}: ${WORDS.slice(i % 7, (i % 7) + 14).join(" ")} (${(i * 7919) % 10007}).`;
    lines.push(line);
    n += Math.round(line.split(" ").length * 1.45);
  }
  return lines.join("\n");
}

interface Turn {
  promptTokens: number;
  cached: number;
  prefillTps: number;
  decodeTps: number;
  wallS: number;
  text: string;
}

async function chat(server: Server, messages: {role: string; content: string}[]): Promise<Turn> {
  const start = performance.now();
  const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({model: "bench", messages, max_tokens: 8, temperature: 0}), signal: AbortSignal.timeout(1_800_000)});
  const body = await res.json() as {choices: {message: {content: string}}[]; usage: {prompt_tokens: number; prompt_tokens_details?: {cached_tokens?: number}};
    timings: {prompt_per_second: number; predicted_per_second: number; cache_n?: number}};
  if (!res.ok) throw new Error(`${server.name}: HTTP ${res.status} ${JSON.stringify(body)}`);
  return {promptTokens: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details?.cached_tokens ?? body.timings.cache_n ?? 0,
    prefillTps: body.timings.prompt_per_second, decodeTps: body.timings.predicted_per_second, wallS: (performance.now() - start) / 1000,
    text: body.choices[0]!.message.content};
}

async function main(): Promise<void> {
  const logger = createLogger("error");
  const modelsDir = process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models");
  const gguf = (await resolveModel(process.env.SVC_MODEL ?? DEFAULT_MAIN_MODEL_SPEC, {modelsDir, logger, progress: "lines"})).path;
  const build = ensureLlamaServer({log: say});
  const ctxPerRegion = Math.max(8192, ...LENGTHS.map((l) => 2 ** Math.ceil(Math.log2(l + 512))));
  const shape: Shape = {gguf, threads: Number(process.env.SVC_THREADS ?? availableParallelism()), regions: REGIONS, ctxPerRegion};
  const variants = [{}, ...(process.env.BENCH_SVC_ENV ?? "").split(";").filter(Boolean).map((set) =>
    Object.fromEntries(set.split(",").map((kv) => kv.split("=") as [string, string])))];
  say(`bench: ${gguf}, ${shape.threads} threads, ${REGIONS} regions of ${ctxPerRegion}; llama-server ${build.tag}`);
  // Past the training length llama-server caps a slot at it unless told the model's length is larger.
  const lift = ctxPerRegion > 8192 ? ["--override-kv", `llama.context_length=int:${ctxPerRegion}`] : [];
  const servers: {label: string; start: () => Promise<Server>}[] = [
    ...variants.map((env, i) => ({label: i === 0 ? "svc" : `svc ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")}`,
      start: () => startSvc(shape, 18741 + i, env)})),
    {label: "llama-server", start: () => startLlamaServer(build.binary, shape, 18740, lift)},
  ];
  const results = new Map<string, Map<number, {cold: Turn; follow: Turn}>>();
  // One server at a time (a long prefill takes both cores), lengths interleaved across servers.
  for (const length of LENGTHS) {
    for (const s of servers) {
      const server = await s.start();
      try {
        const doc = document(length, `doc ${length}`);
        const first = [{role: "user", content: `${doc}\n\nSummarise the document above in one line.`}];
        const cold = await chat(server, first);
        const next = "Now say which line number is the largest, and why it matters.";
        const follow = await chat(server, [...first, {role: "assistant", content: cold.text}, {role: "user", content: next}]);
        if (!results.has(s.label)) results.set(s.label, new Map());
        results.get(s.label)!.set(length, {cold, follow});
        say(`${s.label} @${cold.promptTokens}: prefill ${cold.prefillTps.toFixed(1)} tok/s, decode ${cold.decodeTps.toFixed(1)} tok/s, ` +
          `follow-up ${follow.wallS.toFixed(2)} s (${follow.cached} of ${follow.promptTokens} reused)`);
      } finally {
        await server.stop();
      }
    }
  }
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
