// Decode throughput of the svc server against node-llama-cpp used directly on the same GGUF, in one run.
// The question it answers: how much does the server (HTTP, SSE, our batch policy, pipeline) cost on top of
// the library? Both sides get the same prompt tokens, greedy sampling and context shape, and they never run
// at the same time, because on a 2-core box they would steal each other's cores and both numbers would lie.
//
//   npx tsx bench/throughput.ts        (or: npm run bench:throughput)

import {spawn, type ChildProcess} from "node:child_process";
import {readFileSync} from "node:fs";
import {availableParallelism, cpus, homedir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {getLlama, LlamaLogLevel, type LlamaContextSequence, type Token} from "node-llama-cpp";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAX_TOKENS = 128, REPEATS = 3, PARALLEL = 4, CTX = 2048, TARGET = 0.95;
const REQUEST_TIMEOUT_MS = 120_000, START_TIMEOUT_MS = 600_000, STOP_TIMEOUT_MS = 10_000;
// Story prompts: a 135M model keeps going well past 128 tokens on these, so runs end on max_tokens, not EOS.
const PROMPTS = [
  "Write a long story about a lighthouse keeper who finds a map inside a bottle.",
  "Write a long story about a young dragon who is afraid of flying.",
  "Write a long story about a robot that learns to bake bread in a small village.",
  "Write a long story about two sisters crossing a desert to find their father.",
];
// The text the server renders for [user] with SmolLM2's template (the template adds this system message).
const chatml = (p: string) =>
  `<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n${p}<|im_end|>\n<|im_start|>assistant\n`;

/** One stream's timeline; all times are performance.now() ms in this process. */
interface Run { start: number; first: number; last: number; n: number; times: number[]; text: string; serverTps?: number; promptTokens?: number }

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN; };
const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN; };
// "Tokens after the first over first→last" excludes prefill and TTFT from a decode rate.
const decodeTps = (r: Run) => (r.n > 1 && r.last > r.first ? ((r.n - 1) * 1000) / (r.last - r.first) : NaN);
// Aggregate: every generated token over the span in which any stream was producing tokens.
const aggregateTps = (rs: Run[]) => {
  const span = Math.max(...rs.map((r) => r.last)) - Math.min(...rs.map((r) => r.first));
  return span > 0 ? (rs.reduce((a, r) => a + r.n, 0) * 1000) / span : NaN;
};
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "n/a");

// This box may be shared: CPU burnt by other processes during a phase makes that phase look slower, so each
// phase reports the share of all cores used by processes other than this one and the server child (Linux only).
const statTicks = (pid: number) => {
  try { const f = readFileSync(`/proc/${pid}/stat`, "utf8"); const r = f.slice(f.lastIndexOf(")") + 2).split(" "); return Number(r[11]) + Number(r[12]); } catch { return 0; }
};
function cpuSample(): {at: number; busy: number; ours: number} {
  let busy = NaN;
  try { const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number); busy = f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!; } catch { /* not Linux */ }
  return {at: performance.now(), busy, ours: statTicks(process.pid) + (child?.pid ? statTicks(child.pid) : 0)};
}
// Ticks are USER_HZ (100/s on Linux); steal counts as foreign, since it is CPU we did not get.
// Clamped at 0: per-process and system tick counters are rounded separately, so an idle box reads about -1 %.
const foreignPct = (a: ReturnType<typeof cpuSample>, b: ReturnType<typeof cpuSample>) =>
  Math.max(0, (100 * (b.busy - a.busy - (b.ours - a.ours))) / (((b.at - a.at) / 1000) * 100 * availableParallelism()));

// ---------------------------------------------------------------- server side

let child: ChildProcess | null = null;
const killChild = () => { if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL"); };
process.on("exit", killChild);
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => { killChild(); process.exit(130); });

/** Starts `node --import tsx src/main.ts`, bound to 127.0.0.1 on a free port; resolves with the base URL. */
function startServer(): Promise<string> {
  const env: NodeJS.ProcessEnv = {...process.env, SVC_HOST: "127.0.0.1", SVC_PORT: "0", SVC_PARALLEL: String(PARALLEL),
    SVC_CTX_SIZE: String(CTX), SVC_LOG_LEVEL: "info"}; // info: the "listening on" line is how we learn the port
  delete env.SVC_API_KEY; // an inherited key would make every request 401
  const proc = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"]});
  child = proc;
  const tail: string[] = []; // kept for the error message if it never comes up
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { killChild(); reject(new Error(`server did not listen within ${START_TIMEOUT_MS} ms:\n${tail.join("")}`)); }, START_TIMEOUT_MS);
    let buf = "";
    proc.stderr!.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl + 1); buf = buf.slice(nl + 1);
        tail.push(line); if (tail.length > 30) tail.shift();
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (m) { clearTimeout(timer); resolve(m[1]!); }
      }
    });
    proc.once("exit", (code, sig) => { clearTimeout(timer); reject(new Error(`server exited (${code ?? sig}) before listening:\n${tail.join("")}`)); });
  });
}

async function stopServer(): Promise<void> {
  const proc = child;
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  proc.kill("SIGTERM");
  const t = setTimeout(() => proc.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited; clearTimeout(t); child = null;
}

async function postJson(base: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(base + path, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)});
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/** One streaming chat request; token times are SSE arrival times of content deltas (client view). */
async function streamChat(base: string, prompt: string): Promise<Run> {
  const start = performance.now();
  const res = await fetch(base + "/v1/chat/completions", {
    method: "POST", headers: {"content-type": "application/json"}, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    body: JSON.stringify({messages: [{role: "user", content: prompt}], stream: true, temperature: 0, max_tokens: MAX_TOKENS,
      stream_options: {include_usage: true}}),
  });
  if (!res.ok || !res.body) throw new Error(`chat: HTTP ${res.status} ${await res.text()}`);
  const run: Run = {start, first: 0, last: 0, n: 0, times: [], text: ""};
  const dec = new TextDecoder();
  let buf = "", done = false;
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    const at = performance.now(); // events in one read arrived together
    buf += dec.decode(bytes, {stream: true});
    let sep: number;
    while ((sep = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, sep); buf = buf.slice(sep + 2);
      for (const line of ev.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") { done = true; continue; }
        const j = JSON.parse(data);
        if (j.error) throw new Error(`chat stream error: ${JSON.stringify(j.error)}`);
        const content: string | undefined = j.choices?.[0]?.delta?.content;
        if (content) { run.times.push(at); run.text += content; }
        if (j.usage) { run.n = j.usage.completion_tokens; run.promptTokens = j.usage.prompt_tokens; }
        if (j.timings) run.serverTps = j.timings.predicted_per_second;
      }
    }
  }
  if (!done || run.times.length === 0) throw new Error("chat stream ended without [DONE] or without tokens");
  run.first = run.times[0]!; run.last = run.times.at(-1)!;
  return run;
}

// ---------------------------------------------------------------- in-process side

/** Greedy decode of up to MAX_TOKENS on a cleared sequence; token times are when the generator yields. */
async function evalRun(seq: LlamaContextSequence, tokens: Token[]): Promise<Run & {tokens: Token[]}> {
  await seq.clearHistory();
  const run = {start: performance.now(), first: 0, last: 0, n: 0, times: [] as number[], text: "", tokens: [] as Token[]};
  for await (const tok of seq.evaluate(tokens, {temperature: 0, yieldEogToken: false})) {
    run.times.push(performance.now()); run.tokens.push(tok);
    if (++run.n >= MAX_TOKENS) break; // breaking returns the generator, which stops after this step
  }
  run.first = run.times[0] ?? run.start; run.last = run.times.at(-1) ?? run.start;
  return run;
}

// ---------------------------------------------------------------- main

interface Side { single: number[]; singleN: number[]; singleTtft: number[]; serverTps: number[]; conc: number[]; concTtft: number[];
  concMin: number[]; concMax: number[]; gaps: number[]; text: string; foreign: number }
const newSide = (): Side => ({single: [], singleN: [], singleTtft: [], serverTps: [], conc: [], concTtft: [], concMin: [], concMax: [], gaps: [], text: "", foreign: NaN});
// Per-stream decode rates inside one concurrent run: a wide min..max means some streams were starved.
const spread = (side: Side, rs: Run[]) => { const t = rs.map(decodeTps); side.concMin.push(Math.min(...t)); side.concMax.push(Math.max(...t)); };

async function main(): Promise<void> {
  const logger = createLogger("warn");
  const model = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: join(homedir(), ".cache", "svc", "models"), logger, progress: "lines"});
  const srv = newSide(), lib = newSide();
  let serverTokenCounts: number[] = [], serverPromptTokens: number[] = [];

  // --- 1 & 2: the server, alone on the machine.
  const base = await startServer();
  try {
    const c0 = cpuSample();
    await streamChat(base, PROMPTS[0]!); // warm-up: page in weights, JIT the request path, size buffers
    for (let i = 0; i < REPEATS; i++) {
      const r = await streamChat(base, PROMPTS[0]!);
      srv.single.push(decodeTps(r)); srv.singleN.push(r.n); srv.singleTtft.push(r.first - r.start);
      srv.serverTps.push(r.serverTps ?? NaN);
      if (i === REPEATS - 1) { srv.gaps = gaps(r.times); srv.text = r.text; }
    }
    for (let i = 0; i < REPEATS; i++) {
      const rs = await Promise.all(PROMPTS.map((p) => streamChat(base, p)));
      srv.conc.push(aggregateTps(rs)); srv.concTtft.push(median(rs.map((r) => r.first - r.start))); spread(srv, rs);
      if (i === 0) serverPromptTokens = rs.map((r) => r.promptTokens ?? -1);
    }
    srv.foreign = foreignPct(c0, cpuSample()); // sampled while the child is still alive
    // Prompt check: the server's own tokenization of our ChatML text must match what it charged as prompt_tokens.
    serverTokenCounts = [];
    for (const p of PROMPTS) serverTokenCounts.push(((await postJson(base, "/tokenize", {content: chatml(p)})).tokens as number[]).length);
  } finally {
    await stopServer();
  }

  // --- 3: node-llama-cpp directly, same file and context shape, default batching.
  const llama = await getLlama({gpu: false, build: "never", maxThreads: availableParallelism(), logLevel: LlamaLogLevel.error});
  const m = await llama.loadModel({modelPath: model.path});
  const ctx = await m.createContext({sequences: PARALLEL, contextSize: CTX, batchSize: 64, flashAttention: false});
  const seqs = Array.from({length: PARALLEL}, () => ctx.getSequence());
  const promptTokens = PROMPTS.map((p) => m.tokenize(chatml(p), true));
  const release = llama.llamaCppRelease.release;
  const c1 = cpuSample();
  try {
    await evalRun(seqs[0]!, promptTokens[0]!); // warm-up, as for the server
    for (let i = 0; i < REPEATS; i++) {
      const r = await evalRun(seqs[0]!, promptTokens[0]!);
      lib.single.push(decodeTps(r)); lib.singleN.push(r.n); lib.singleTtft.push(r.first - r.start);
      if (i === REPEATS - 1) { lib.gaps = gaps(r.times); lib.text = m.detokenize(r.tokens); }
    }
    for (let i = 0; i < REPEATS; i++) {
      const rs = await Promise.all(seqs.map((s, k) => evalRun(s, promptTokens[k]!)));
      lib.conc.push(aggregateTps(rs)); lib.concTtft.push(median(rs.map((r) => r.first - r.start))); spread(lib, rs);
    }
    lib.foreign = foreignPct(c1, cpuSample());
  } finally {
    await ctx.dispose(); await m.dispose(); await llama.dispose();
  }

  // --- 4: report.
  const nlcVersion = JSON.parse(readFileSync(join(ROOT, "node_modules/node-llama-cpp/package.json"), "utf8")).version;
  console.log("svc throughput benchmark");
  console.log(`machine: ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}, ` +
    `node-llama-cpp ${nlcVersion} (llama.cpp ${release}), CPU only`);
  console.log(`model: ${model.path}`);
  console.log(`settings: parallel=${PARALLEL} ctx=${CTX} batch=64 flashAttention=off temperature=0 max_tokens=${MAX_TOKENS}, ` +
    `median of ${REPEATS} after 1 warm-up; server and in-process never run at the same time`);
  const localCounts = promptTokens.map((t) => t.length);
  const promptOk = localCounts.every((c, i) => c === serverTokenCounts[i] && c === serverPromptTokens[i]);
  console.log(`prompt tokens: in-process ${localCounts.join("/")}, server /tokenize ${serverTokenCounts.join("/")}, ` +
    `server usage.prompt_tokens ${serverPromptTokens.join("/")} -> ${promptOk ? "match" : "MISMATCH"}`);
  console.log(`single-stream output identical (greedy, last run): ${srv.text === lib.text ? "yes" : "no"}`);
  console.log(`completion tokens per single run: server ${srv.singleN.join("/")}, in-process ${lib.singleN.join("/")}`);
  console.log("");
  const rows: [string, number, number][] = [
    ["single stream decode tok/s", median(srv.single), median(lib.single)],
    [`${PARALLEL} concurrent aggregate tok/s`, median(srv.conc), median(lib.conc)],
    ["single stream TTFT ms", median(srv.singleTtft), median(lib.singleTtft)],
    [`${PARALLEL} concurrent TTFT ms (median stream)`, median(srv.concTtft), median(lib.concTtft)],
    [`${PARALLEL} concurrent slowest stream tok/s`, median(srv.concMin), median(lib.concMin)],
    [`${PARALLEL} concurrent fastest stream tok/s`, median(srv.concMax), median(lib.concMax)],
  ];
  console.log("ratio = server / in-process (tok/s: higher is better; TTFT: lower is better)");
  console.log(`${"".padEnd(38)}${"server".padStart(10)}${"in-proc".padStart(10)}${"ratio".padStart(8)}`);
  for (const [name, s, l] of rows) console.log(`${name.padEnd(38)}${f1(s).padStart(10)}${f1(l).padStart(10)}${(s / l).toFixed(2).padStart(8)}`);
  console.log(`server-reported timings.predicted_per_second (single, median): ${f1(median(srv.serverTps))}  [runs: ${srv.serverTps.map(f1).join(", ")}]`);
  console.log(`runs, single tok/s: server ${srv.single.map(f1).join(", ")}; in-process ${lib.single.map(f1).join(", ")}`);
  console.log(`runs, ${PARALLEL}-concurrent tok/s: server ${srv.conc.map(f1).join(", ")}; in-process ${lib.conc.map(f1).join(", ")}`);
  const gapLine = (g: number[]) => `median ${f1(median(g))} p90 ${f1(pct(g, 0.9))} max ${f1(Math.max(...g))} ms`;
  console.log(`per-token gap, single stream (last run): server ${gapLine(srv.gaps)}; in-process ${gapLine(lib.gaps)}`);
  console.log(`CPU used by other processes: ${f1(srv.foreign)}% during the server phase, ${f1(lib.foreign)}% during the in-process phase` +
    (srv.foreign > 10 || lib.foreign > 10 ? "  (WARNING: the box was busy; figures are noisy, rerun when idle)" : ""));
  const r1 = median(srv.single) / median(lib.single), r4 = median(srv.conc) / median(lib.conc);
  console.log("");
  console.log(`target: server/in-process ratio >= ${TARGET} -> single ${r1.toFixed(3)} ${r1 >= TARGET ? "PASS" : "FAIL"}, ` +
    `${PARALLEL}-concurrent ${r4.toFixed(3)} ${r4 >= TARGET ? "PASS" : "FAIL"}`);
}

main().then(() => process.exit(0), (err) => { killChild(); console.error(err instanceof Error ? err.stack ?? err.message : err); process.exit(1); });
