// svc against llama-server on the same GGUF, threads and regions, in one interleaved run (issue 16).
// llama-server is built once from the llama.cpp source node-llama-cpp bundles (bench/llama-server/build.ts);
// node-llama-cpp driven in-process is a third column that explains losses. Run by hand; nothing here is a test.
//
//   npm run bench:vs-llama-server            (BENCH_QUICK=1 for fewer rounds)
//
// Workloads (greedy, streamed chat): (a) one stream, 128-token budget, short prompts sharing a system message:
// decode tok/s and time to first token; (b) 4 concurrent streams, 16 requests: aggregate tok/s, TTFT p50/p95;
// (c) agentic: 3 conversations at once, 5 turns each, a ~2,400-token shared system prompt, 48-token replies,
// cold then warm: wall time and follow-up TTFT; (d) a JSON schema against free text; (e) the library alone;
// (f) svc's decode rate while a side model (embeddings) is kept busy; (g) long prompts (2k, 4k, 8k, 16k tokens; 2k
// and 8k quick): cold prefill, decode after the prompt, the follow-up's wall (bench/long-prompts.ts on its own);
// (h) the agentic workload alone and beside a busy process on one core, each server's ratio of the two;
// (i) Claude Code's first two turns with its default prompt and tools (bench/llama-server/claude-code-run.ts).

import {spawn} from "node:child_process";
import {availableParallelism, homedir} from "node:os";
import {join} from "node:path";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {aggregateTps, chatOnceDecodeTps, decodeTps, median, percentile, streamChat, ttftMs, type ChatBody, type Stream} from "./llama-server/client.ts";
import {libraryDecode} from "./llama-server/library.ts";
import {runClaudeCode} from "./llama-server/claude-code-run.ts";
import {runLongPrompts} from "./llama-server/long-prompts-run.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../support/llama-server/servers.ts";

const QUICK = process.env.BENCH_QUICK === "1";
/** BENCH_ONLY=a,b,c,d,f,g,h,i runs only those workloads (all by default). */
const ONLY = new Set((process.env.BENCH_ONLY ?? "a,b,c,d,f,g,h,i").split(","));
const ROUNDS = QUICK ? 1 : 3;
const SYSTEM = "You are a helpful assistant. Answer the user's request in full.";
const TOPICS = ["a lighthouse keeper who finds a map", "a young dragon afraid of flying", "a robot that learns to bake bread", "two sisters crossing a desert",
  "a clockmaker who can stop time", "a fox who opens a library", "a sailor lost in fog", "a garden that grows at night"];
const story = (i: number): ChatBody => ({messages: [{role: "system", content: SYSTEM}, {role: "user", content: `Write a long story about ${TOPICS[i % TOPICS.length]}.`}],
  max_tokens: 128});

const SCHEMA = {type: "object", additionalProperties: false, required: ["title", "characters", "chapters"], properties: {
  title: {type: "string", maxLength: 60},
  characters: {type: "array", maxItems: 6, items: {type: "object", additionalProperties: false, required: ["name", "role"],
    properties: {name: {type: "string", maxLength: 30}, role: {type: "string", maxLength: 60}}}},
  chapters: {type: "array", maxItems: 8, items: {type: "string", maxLength: 120}}}};
const structured = (i: number): ChatBody => ({...story(i), response_format: {type: "json_schema", json_schema: {name: "story_plan", schema: SCHEMA}},
  messages: [{role: "system", content: SYSTEM}, {role: "user", content: `Plan a long story about ${TOPICS[i % TOPICS.length]}: title, characters, chapters.`}]});

/** A ~2,400-token system prompt like a coding agent's: tool documentation, rules, examples. */
function agentSystem(): string {
  const tools = ["read_file", "write_file", "list_dir", "search", "run_tests", "git_diff", "git_commit", "open_url", "ask_user", "plan"];
  const parts = ["You are an autonomous software engineering agent working in a repository. Follow the rules below exactly."];
  for (const [i, t] of tools.entries()) {
    parts.push(`Tool ${i + 1}: ${t}. Use ${t} when the task needs it. Arguments are given as JSON with named fields; every field is required ` +
      `unless marked optional. The tool returns a result object with a status field and a body field. If the status is an error, read ` +
      `the body, correct the arguments and try again at most twice. Never call ${t} with paths outside the repository root, never ` +
      `guess file contents, and always explain in one sentence why the call is needed before making it. Example: to use ${t} on the ` +
      `module src/feature_${i}.ts you first state the goal, then call the tool, then summarise what it returned in plain words.`);
  }
  for (let i = 0; i < 12; i++) {
    parts.push(`Rule ${i + 1}: keep changes small and focused; run the tests after each change; report failures with the exact message; ` +
      `prefer existing helpers over new code; write comments that say why, not what; never commit secrets or generated files.`);
  }
  return parts.join("\n\n");
}

interface Row {
  label: string;
  svc: number;
  llama: number;
  lib?: number;
  /** Whether more is better (tok/s) or less (ms, s): the ratio is always svc / llama-server. */
  unit: string;
}

const rows: Row[] = [];
const say = (line: string) => process.stderr.write(`${line}\n`);

/**
 * Waits until svc has no reply sealing or waiting for its idle seal. svc seals finished replies once it is idle
 * (src/engine/llama/region-pool.ts); in an interleaved run its idle time is llama-server's turn, so without this
 * wait svc's seals would run on the cores llama-server is being measured on.
 */
async function settled(svc: Server): Promise<void> {
  for (let t = 0; t < 300; t++) {
    const pool = ((await (await fetch(`${svc.url}/cache`)).json()) as {pool: {sealing: number; unsealed: number}}).pool;
    if (pool.sealing === 0 && pool.unsealed === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  say("svc did not settle within 30 s; measuring anyway");
}

async function oneStream(server: Server, bodies: ChatBody[]): Promise<Stream[]> {
  const out: Stream[] = [];
  for (const b of bodies) out.push(await streamChat(server.url, b));
  return out;
}

async function concurrent(server: Server, bodies: ChatBody[], width: number): Promise<Stream[]> {
  const queue = [...bodies];
  const out: Stream[] = [];
  await Promise.all(Array.from({length: width}, async () => {
    for (let b = queue.shift(); b; b = queue.shift()) out.push(await streamChat(server.url, b));
  }));
  return out;
}

/** N conversations at once, M turns each: each turn sends the whole history back. */
async function agentic(server: Server, system: string, conversations: number, turns: number, tag: string): Promise<{wallS: number; followUpTtft: number[]}> {
  const start = performance.now();
  const followUpTtft: number[] = [];
  await Promise.all(Array.from({length: conversations}, async (_, c) => {
    const messages: {role: string; content: string}[] = [{role: "system", content: system}];
    for (let t = 0; t < turns; t++) {
      messages.push({role: "user", content: `Task ${tag}-${c}, step ${t + 1}: describe the next change to make in module ${c} and why.`});
      const s = await streamChat(server.url, {messages: [...messages], max_tokens: 48});
      if (t > 0) followUpTtft.push(ttftMs(s));
      messages.push({role: "assistant", content: s.text});
    }
  }));
  return {wallS: (performance.now() - start) / 1000, followUpTtft};
}

async function main(): Promise<void> {
  const logger = createLogger("error");
  const gguf = (await resolveModel(process.env.SVC_MODEL ?? DEFAULT_MAIN_MODEL_SPEC, {modelsDir: process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models"), logger, progress: "lines"})).path;
  const build = ensureLlamaServer({log: say});
  const shape: Shape = {gguf, threads: Number(process.env.SVC_THREADS ?? availableParallelism()), regions: 4, ctxPerRegion: 8192};
  say(`bench: ${gguf}, ${shape.threads} threads, ${shape.regions} regions of ${shape.ctxPerRegion}; llama-server ${build.tag} (${build.binary})`);
  const svc = await startSvc(shape, 18731);
  const llama = await startLlamaServer(build.binary, shape, 18732);
  const pair = [svc, llama];
  /** Each server's turn on clean cores (see settled()). */
  const turnOf = async (s: Server) => {
    if (s === llama) await settled(svc);
    return s;
  };
  try {
    // Warm both once (first-request costs are not what is measured).
    for (const s of pair) await streamChat(s.url, {...story(0), max_tokens: 8});

    const single = new Map<Server, Stream[]>(pair.map((s) => [s, []]));
    const m = (s: Server, f: (x: Stream) => number) => median(single.get(s)!.map(f));
    if (ONLY.has("a")) {
      // (a) one stream; and the same prompts not streamed, in the same rounds (streamed first in even rounds,
      // plain first in odd ones), so that drift on a shared machine lands on both sides of the ratio.
      const plain = new Map<Server, number[]>(pair.map((s) => [s, []]));
      for (let r = 0; r < ROUNDS; r++) {
        for (const s of r % 2 ? [...pair].reverse() : pair) {
          const prompts = [0, 1, 2, 3].map((i) => story(i + r));
          const streamed = async () => single.get(s)!.push(...(await oneStream(await turnOf(s), prompts)));
          const notStreamed = async () => {
            const srv = await turnOf(s);
            for (const p of prompts) plain.get(s)!.push(await chatOnceDecodeTps(srv.url, p));
          };
          if (r % 2) await notStreamed().then(streamed);
          else await streamed().then(notStreamed);
        }
      }
      const streamedOverPlain = (s: Server) => median(single.get(s)!.map((x) => x.serverDecodeTps)) / median(plain.get(s)!);
      say("(a) done");
      // (e) the library alone, same prompts as rendered by the template (SmolLM2's ChatML)
      const lib = await libraryDecode(gguf, shape.threads, [0, 1, 2, 3].map((i) =>
        `<|im_start|>system\n${SYSTEM}<|im_end|>\n<|im_start|>user\nWrite a long story about ${TOPICS[i]}.<|im_end|>\n<|im_start|>assistant\n`), 128);
      rows.push({label: "(a) 1 stream: decode tok/s (median)", svc: m(svc, decodeTps), llama: m(llama, decodeTps), lib: median(lib.map((x) => x.decodeTps)), unit: "tok/s"});
      rows.push({label: "(a) 1 stream: TTFT p50", svc: m(svc, ttftMs), llama: m(llama, ttftMs), lib: median(lib.map((x) => x.ttftMs)), unit: "ms"});
      rows.push({label: "(a) streamed / not streamed decode (server timings)", svc: streamedOverPlain(svc), llama: streamedOverPlain(llama), unit: "x"});

    
    }

    if (ONLY.has("b")) {
      // (b) four concurrent streams, 16 requests
      const conc = new Map<Server, {agg: number[]; ttft: number[]}>(pair.map((s) => [s, {agg: [], ttft: []}]));
      for (let r = 0; r < Math.max(1, ROUNDS - 1); r++) {
        for (const s of r % 2 ? [...pair].reverse() : pair) {
          const runs = await concurrent(await turnOf(s), Array.from({length: 16}, (_, i) => story(i + r)), 4);
          conc.get(s)!.agg.push(aggregateTps(runs));
          conc.get(s)!.ttft.push(...runs.map(ttftMs));
        }
      }
      say("(b) done");
      rows.push({label: "(b) 4 concurrent: aggregate tok/s", svc: median(conc.get(svc)!.agg), llama: median(conc.get(llama)!.agg), unit: "tok/s"});
      rows.push({label: "(b) 4 concurrent: TTFT p50", svc: median(conc.get(svc)!.ttft), llama: median(conc.get(llama)!.ttft), unit: "ms"});
      rows.push({label: "(b) 4 concurrent: TTFT p95", svc: percentile(conc.get(svc)!.ttft, 0.95), llama: percentile(conc.get(llama)!.ttft, 0.95), unit: "ms"});

    
    }

    if (ONLY.has("d")) {
      // (d) a JSON schema against free text, one stream
      const schemaTps = new Map<Server, number[]>(pair.map((s) => [s, []]));
      for (let r = 0; r < ROUNDS; r++) {
        for (const s of r % 2 ? [...pair].reverse() : pair) schemaTps.get(s)!.push(...(await oneStream(await turnOf(s), [0, 1].map((i) => structured(i + r)))).map(decodeTps));
      }
      say("(d) done");
      rows.push({label: "(d) schema-constrained decode tok/s", svc: median(schemaTps.get(svc)!), llama: median(schemaTps.get(llama)!), unit: "tok/s"});
      rows.push({label: "(d) constrained / free decode", svc: median(schemaTps.get(svc)!) / m(svc, decodeTps),
        llama: median(schemaTps.get(llama)!) / m(llama, decodeTps), unit: "x"});

    
    }

    if (ONLY.has("c")) {
      // (c) agentic: cold (the system prompt is new to the server), then warm (same system prompt, new conversations)
      const system = agentSystem();
      const ag = new Map<Server, {cold: number; warm: number; ttft: number[]}>();
      for (const s of pair) ag.set(s, {cold: 0, warm: 0, ttft: []});
      for (const phase of ["cold", "warm"] as const) {
        for (const s of phase === "cold" ? pair : [...pair].reverse()) {
          const r = await agentic(await turnOf(s), system, 3, QUICK ? 3 : 5, `${phase}`);
          ag.get(s)![phase] = r.wallS;
          ag.get(s)!.ttft.push(...r.followUpTtft);
          say(`(c) ${s.name} ${phase}: ${r.wallS.toFixed(1)} s`);
        }
      }
      rows.push({label: "(c) agentic wall, cold", svc: ag.get(svc)!.cold, llama: ag.get(llama)!.cold, unit: "s"});
      rows.push({label: "(c) agentic wall, warm", svc: ag.get(svc)!.warm, llama: ag.get(llama)!.warm, unit: "s"});
      rows.push({label: "(c) agentic follow-up TTFT median", svc: median(ag.get(svc)!.ttft), llama: median(ag.get(llama)!.ttft), unit: "ms"});
    
    }

    if (ONLY.has("h")) {
      // (h) shared cores: the agentic workload (3 conversations x 3 turns, a system prompt new to the server) alone,
      // then with a busy loop in another process taking one core. Proportional sharing would cost about 2x on 2 cores.
      const walls = new Map<Server, {alone: number; busy: number}>();
      let session = 0;
      for (const phase of ["alone", "busy"] as const) {
        for (const s of pair) {
          const server = await turnOf(s);
          const spinner = phase === "busy" ? spawn(process.execPath, ["-e", "for (;;) {}"], {stdio: "ignore"}) : null;
          try {
            const r = await agentic(server, `Session ${++session}.\n${agentSystem()}`, 3, 3, `h${session}`);
            walls.set(s, {...(walls.get(s) ?? {alone: NaN, busy: NaN}), [phase]: r.wallS});
            say(`(h) ${s.name} ${phase === "busy" ? "beside a busy core" : "alone"}: ${r.wallS.toFixed(1)} s`);
          } finally {
            spinner?.kill("SIGKILL");
          }
        }
      }
      const ratio = (s: Server) => walls.get(s)!.busy / walls.get(s)!.alone;
      rows.push({label: "(h) agentic wall beside a busy core / alone", svc: ratio(svc), llama: ratio(llama), unit: "x"});
      rows.push({label: "(h) agentic wall beside a busy core", svc: walls.get(svc)!.busy, llama: walls.get(llama)!.busy, unit: "s"});
    }

    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    say("svc time breakdown over the run (seconds, summed over requests):");
    for (const line of metrics.split("\n")) if (/^svc:(phase_|seal|prefix_)|^ref:(prompt_seconds|tokens_predicted_seconds)_total/.test(line)) say(`  ${line}`);
  } catch (err) {
    for (const s of pair) say(`--- last lines of ${s.name} (exit ${s.child.exitCode ?? "none"}, signal ${s.child.signalCode ?? "none"}):\n${s.log.slice(-25).join("\n")}`);
    throw err;
  } finally {
    await Promise.all(pair.map((s) => s.stop()));
  }

  // (f) sharing cores: svc's decode while a side model (embeddings) is kept busy
  if (ONLY.has("f")) {
    const side = await startSvc(shape, 18733, {SVC_NPU_MODELS: "nx3-embedding-0.6b"});
    try {
      await streamChat(side.url, {...story(0), max_tokens: 8});
      const alone = median((await oneStream(side, [0, 1, 2].map(story))).map(decodeTps));
      let busy = true;
      const loop = (async () => {
        while (busy) {
          await fetch(`${side.url}/v1/embeddings`, {method: "POST", headers: {"content-type": "application/json"},
            body: JSON.stringify({model: "nx3-embedding-0.6b", input: Array.from({length: 8}, (_, i) => `Sentence ${i} about the weather and the sea.`)})});
        }
      })();
      const shared = median((await oneStream(side, [0, 1, 2].map(story))).map(decodeTps));
      busy = false;
      await loop;
      say(`(f) svc decode with an embedding loop beside it: ${shared.toFixed(1)} tok/s vs ${alone.toFixed(1)} alone (${(shared / alone).toFixed(2)}x)`);
      rows.push({label: "(f) svc decode, embeddings busy / alone", svc: shared / alone, llama: NaN, unit: "x"});
    } finally {
      await side.stop();
    }
  }

  // (g) long prompts: cold prefill, decode after the prompt and the follow-up's wall, each server alone on the cores
  if (ONLY.has("g")) {
    const lengths = QUICK ? [2000, 8000] : [2000, 4000, 8000, 16000];
    const long = await runLongPrompts({gguf, threads: shape.threads, regions: shape.regions, lengths, llamaServer: build.binary, say});
    for (const length of lengths) {
      const a = long.get("svc")!.get(length)!;
      const b = long.get("llama-server")!.get(length)!;
      const n = a.cold.promptTokens;
      rows.push({label: `(g) ${n}-token prompt: cold prefill tok/s`, svc: a.cold.prefillTps, llama: b.cold.prefillTps, unit: "tok/s"});
      rows.push({label: `(g) ${n}-token prompt: decode after it tok/s`, svc: a.cold.decodeTps, llama: b.cold.decodeTps, unit: "tok/s"});
      rows.push({label: `(g) ${n}-token prompt: follow-up wall`, svc: a.follow.wallS, llama: b.follow.wallS, unit: "s"});
    }
  }

  // (i) a real coding agent: Claude Code's first two turns, each server alone on the cores
  if (ONLY.has("i")) {
    const agent = await runClaudeCode({gguf, threads: shape.threads, llamaServer: build.binary, say});
    for (const t of [0, 1]) {
      const a = agent.get("svc")![t]!;
      const b = agent.get("llama-server")![t]!;
      const prompt = a.requests[0]!.prompt;
      rows.push({label: `(i) Claude Code turn ${t + 1} (${prompt}-token prompt): agent wall`, svc: a.wallS, llama: b.wallS, unit: "s"});
      rows.push({label: `(i) Claude Code turn ${t + 1}: server wall of its requests`, svc: a.requests.reduce((x, r) => x + r.ms, 0) / 1000,
        llama: b.requests.reduce((x, r) => x + r.ms, 0) / 1000, unit: "s"});
    }
  }

  const fmt = (x: number | undefined, unit: string) => (x === undefined || !Number.isFinite(x) ? "-" : unit === "x" ? x.toFixed(2) : unit === "s" ? x.toFixed(1) : x.toFixed(unit === "ms" ? 0 : 1));
  const lines = ["| workload | unit | svc | llama-server | library | svc / llama-server |", "|---|---|---|---|---|---|"];
  for (const r of rows) {
    lines.push(`| ${r.label} | ${r.unit} | ${fmt(r.svc, r.unit)} | ${fmt(r.llama, r.unit)} | ${fmt(r.lib, r.unit)} | ${Number.isFinite(r.llama) ? (r.svc / r.llama).toFixed(2) : "-"} |`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(1);
});
