// svc in front of 1, 2 and 3 llama-server replicas (SVC_ENGINE) on an agentic workload: many conversations
// at once, each turn sending its whole history back, behind two long system prompts, each conversation
// opening with a file of its own (as an agent's first tool result), so a turn that lands on another replica
// than the previous one re-evaluates that conversation's own history, while the system prompt is everywhere. Prefix-aware routing
// against round-robin, and one llama-server with as many slots as all the replicas together (its own slot
// choice and prompt cache) as the anchor. On 2 cores the replicas share the CPU, so the figure is the
// prefill the routing saves (prompt tokens the replicas served from their caches), not wall time.
//   npm run bench:replicas            (BENCH_QUICK=1 for fewer conversations)

import {homedir} from "node:os";
import {join} from "node:path";
import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../support/llama-server/servers.ts";
import {DEFAULT_MAIN_MODEL_SPEC, resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";

const QUICK = process.env.BENCH_QUICK === "1";
const CONVERSATIONS = QUICK ? 6 : 16;
const TURNS = QUICK ? 3 : 4;
/** Conversations in flight at once (each runs its turns one after another). */
const IN_FLIGHT = QUICK ? 3 : 4;
/** Lines of each conversation's file (about 42 tokens a line) and copies of the system prompt's rules (about 350 tokens). */
const FILE_LINES = QUICK ? 6 : 12;
const SYSTEM_REPEAT = QUICK ? 1 : 2;
const SLOTS_PER_REPLICA = 2;
const CTX_PER_SLOT = 4096;
const REPLY_TOKENS = 24;

const say = (line: string) => process.stderr.write(`${line}\n`);

/** A source file, different for every conversation (the agent's first read). */
function fileOf(c: number): string {
  const lines = [`// module-${c}.ts: the ${["billing", "search", "auth", "upload", "report", "queue", "mailer", "cache"][c % 8]} service, revision ${c * 7 + 3}`];
  for (let i = 0; i < FILE_LINES; i++) {
    lines.push(`export function step${c}_${i}(input${i}: number, limit${c}: number): number { return Math.min(input${i} * ${i + c + 2}, limit${c} - ${i * 3 + c}); }`);
  }
  return lines.join("\n");
}

/** Two agents' system prompts: tool descriptions and rules, as coding agents send. */
function systemPrompt(agent: string): string {
  const tools = ["read_file", "write_file", "list_dir", "run_tests", "grep", "git_diff", "open_issue", "search_docs"];
  const lines = [`You are ${agent}, an engineering agent working in a large TypeScript repository.`];
  for (const [i, t] of tools.entries()) {
    lines.push(`Tool ${t}: call it with a JSON object; it returns the result as text. Use ${t} only when the task needs it; ` +
      `never call it twice with the same arguments. Rule ${i + 1}: explain each change in one sentence, keep diffs small, and run the tests after every edit.`);
  }
  lines.push("Answer briefly. Never invent file names. When unsure, read before you write.");
  return lines.join("\n").repeat(SYSTEM_REPEAT);
}

interface Turn {
  prompt: number;
  cached: number;
  replica: string | null;
  reason: string | null;
}

async function chat(base: string, messages: {role: string; content: string}[]): Promise<{text: string; turn: Turn}> {
  const res = await fetch(`${base}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({model: "bench", messages, max_tokens: REPLY_TOKENS, temperature: 0})});
  const body = await res.json() as {choices: {message: {content: string | null}}[]; usage: {prompt_tokens: number; prompt_tokens_details?: {cached_tokens?: number}};
    timings?: {route?: {replica: string; reason: string}}};
  if (!res.ok) throw new Error(`${base}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return {text: body.choices[0]!.message.content ?? "", turn: {prompt: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details?.cached_tokens ?? 0,
    replica: body.timings?.route?.replica ?? null, reason: body.timings?.route?.reason ?? null}};
}

async function workload(base: string): Promise<{turns: Turn[]; wallS: number}> {
  const systems = [systemPrompt("Atlas"), systemPrompt("Borealis")];
  const turns: Turn[] = [];
  const queue = Array.from({length: CONVERSATIONS}, (_, c) => c);
  const start = performance.now();
  await Promise.all(Array.from({length: IN_FLIGHT}, async () => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
      const messages = [{role: "system", content: systems[c % 2]!}];
      for (let t = 0; t < TURNS; t++) {
        const ask = `Step ${t + 1}: what should change in module ${c} next, and why?`;
        messages.push({role: "user", content: t === 0 ? `Here is the file I am working on:\n${fileOf(c)}\n\n${ask}` : ask});
        const {text, turn} = await chat(base, messages);
        turns.push(turn);
        messages.push({role: "assistant", content: text});
      }
    }
  }));
  return {turns, wallS: (performance.now() - start) / 1000};
}

interface Row {
  setup: string;
  replicas: number;
  prompt: number;
  cached: number;
  hitRate: number;
  /** Requests that found any of their prompt cached. */
  requestHits: number;
  spread: string;
  wallS: number;
}

function summarise(setup: string, replicas: number, r: {turns: Turn[]; wallS: number}): Row {
  const prompt = r.turns.reduce((n, t) => n + t.prompt, 0);
  const cached = r.turns.reduce((n, t) => n + t.cached, 0);
  const per = new Map<string, number>();
  for (const t of r.turns) if (t.replica) per.set(t.replica, (per.get(t.replica) ?? 0) + 1);
  return {setup, replicas, prompt, cached, hitRate: cached / Math.max(1, prompt), requestHits: r.turns.filter((t) => t.cached > 0).length / r.turns.length,
    spread: per.size > 0 ? [...per.values()].join("/") : "-", wallS: r.wallS};
}

async function main(): Promise<void> {
  const logger = createLogger("error");
  const modelsDir = process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models");
  const gguf = (await resolveModel(process.env.SVC_MODEL ?? DEFAULT_MAIN_MODEL_SPEC, {modelsDir, logger, progress: "lines"})).path;
  const build = ensureLlamaServer({log: say});
  say(`bench:replicas: ${gguf}; ${CONVERSATIONS} conversations x ${TURNS} turns, ${IN_FLIGHT} in flight, replies of ${REPLY_TOKENS} tokens; ` +
    `replicas of ${SLOTS_PER_REPLICA} slots x ${CTX_PER_SLOT}, 1 thread each; llama-server ${build.tag}`);
  const rows: Row[] = [];
  let port = 18840;
  const replicaShape = (slots: number): Shape => ({gguf, threads: 1, regions: slots, ctxPerRegion: CTX_PER_SLOT});
  for (const n of [1, 2, 3]) {
    // The anchor: one llama-server with every slot the replicas have together, sent the same workload directly.
    const alone = await startLlamaServer(build.binary, replicaShape(n * SLOTS_PER_REPLICA), port++);
    try {
      rows.push(summarise(`llama-server alone, ${n * SLOTS_PER_REPLICA} slots`, n, await workload(alone.url)));
    } finally {
      await alone.stop();
    }
    for (const routing of n === 1 ? ["prefix"] : ["prefix", "round-robin"]) {
      // Fresh replicas per run: nothing cached from the previous one.
      const replicas: Server[] = [];
      let svc: Server | null = null;
      try {
        for (let i = 0; i < n; i++) replicas.push(await startLlamaServer(build.binary, replicaShape(SLOTS_PER_REPLICA), port++));
        svc = await startSvc({gguf, threads: 1, regions: SLOTS_PER_REPLICA, ctxPerRegion: CTX_PER_SLOT}, port++,
          {SVC_ENGINE: replicas.map((r) => r.url).join(","), SVC_ROUTING: routing, SVC_LOG_LEVEL: "warn"});
        rows.push(summarise(`svc, ${n} replica${n > 1 ? "s" : ""}, ${routing}`, n, await workload(svc.url)));
      } finally {
        await svc?.stop();
        for (const r of replicas) await r.stop();
      }
      say(`  ${rows.at(-1)!.setup}: ${(rows.at(-1)!.hitRate * 100).toFixed(1)}% of prompt tokens cached`);
    }
  }
  const lines = ["| setup | prompt tokens | served from cache | token hit rate | requests with a hit | prefill evaluated | vs llama-server alone (prefill) | requests per replica | wall s |",
    "|---|---|---|---|---|---|---|---|---|"];
  for (const r of rows) {
    const anchor = rows.find((a) => a.replicas === r.replicas && a.setup.startsWith("llama-server"))!;
    const evaluated = r.prompt - r.cached;
    lines.push(`| ${r.setup} | ${r.prompt} | ${r.cached} | ${(r.hitRate * 100).toFixed(1)}% | ${(r.requestHits * 100).toFixed(0)}% | ${evaluated} | ` +
      `${(evaluated / Math.max(1, anchor.prompt - anchor.cached)).toFixed(2)} | ${r.spread} | ${r.wallS.toFixed(1)} |`);
  }
  for (const n of [2, 3]) {
    const prefix = rows.find((r) => r.replicas === n && r.setup.endsWith("prefix"))!;
    const rr = rows.find((r) => r.replicas === n && r.setup.endsWith("round-robin"))!;
    lines.push("", `${n} replicas: prefix-aware routing evaluates ${prefix.prompt - prefix.cached} prompt tokens, round-robin ${rr.prompt - rr.cached} ` +
      `(${((1 - (prefix.prompt - prefix.cached) / Math.max(1, rr.prompt - rr.cached)) * 100).toFixed(1)}% of round-robin's prefill saved)`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
