// Workload (i) of bench:vs-llama-server: a real coding agent's first two turns. Claude Code (the version pinned in
// devDependencies), headless, with its default system prompt and tools, against each server in turn on a 32,768-token
// context per region: `claude -p TASK`, then `claude -p --continue NEXT`. Each server alone on the cores.
//
// svc runs as the README tells a Claude Code user to start it (SVC_FORK=1 SVC_FORK_MAP=coding-agent
// SVC_CTX_SIZE=32768); llama-server gets the same regions and context (`-np 4 -c 131072`, and the flag that lifts its
// clamp at the model's 8,192-token training length).
//
// Both get the same chat template, one that writes the tools into the prompt: Qwen2.5-Instruct's, read from the
// bundled llama.cpp's models/templates (ChatML with Hermes tool calls; SmolLM2 has the same ChatML tokens).
// SmolLM2's own template has no tools in it: llama-server then leaves Claude Code's 22 tools out of the prompt
// (4.4k tokens where svc, which writes them into the system message, reads 12.2k), and the walls compared
// different work.
//
// Between the agent and the server sits the recording proxy of the coding-agent tests. It caps each request's
// max_tokens at REPLY_CAP and sets temperature 0: Claude Code asks for up to 32,000 tokens at temperature 1, and a
// 135M model far past its training length would write until that budget ran out, differently on each server. With
// the cap both write about as much (the token counts are printed), and the wall is dominated by what the target is
// about: reading a ~12.6k-token prompt cold, then the second turn's reuse of it. `--max-turns 1` ends a turn after
// one reply, so a call the model happens to write does not start a different number of requests on each server.

import {spawn} from "node:child_process";
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {sseData, startRecorder, type Exchange} from "../../test/fixtures/coding-agent/recorder.ts";
import {bundledTemplate} from "../../test/fixtures/templates/bundled.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../../support/llama-server/servers.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Tokens per reply: enough to see decode, small next to the prompt. */
const REPLY_CAP = 64;
const CONTEXT = 32768;
const REGIONS = 4;
const TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja";
const RUN_TIMEOUT_MS = 1_200_000;
const TASKS = ["List the files in this folder and say what each one is for.", "Now suggest one improvement to notes.txt and explain why."];

export interface AgentTurn {
  /** The agent process's wall, start to exit (its own start-up included, the same on both servers). */
  wallS: number;
  /** The requests it sent, and per request: the server's wall, prompt tokens, cached prompt tokens, reply tokens. */
  requests: {url: string; status: number; ms: number; prompt: number; cached: number; output: number}[];
  exitCode: number | null;
}

/** Anthropic streamed usage: input_tokens are the uncached ones; the last event that carries usage has the totals. */
function usageOf(e: Exchange): {prompt: number; cached: number; output: number} {
  let input = 0;
  let cached = 0;
  let created = 0;
  let output = 0;
  for (const d of sseData(e.responseText)) {
    const u = d.type === "message_start" ? d.message?.usage : d.type === "message_delta" ? d.usage : undefined;
    if (!u) continue;
    input = Math.max(input, u.input_tokens ?? 0);
    cached = Math.max(cached, u.cache_read_input_tokens ?? 0);
    created = Math.max(created, u.cache_creation_input_tokens ?? 0);
    output = Math.max(output, u.output_tokens ?? 0);
  }
  return {prompt: input + cached + created, cached, output};
}

function claudeBinary(): string {
  const path = join(ROOT, "node_modules/.bin/claude");
  if (!existsSync(path)) throw new Error(`${path} is missing: npm ci installs it (devDependency @anthropic-ai/claude-code)`);
  return path;
}

async function runClaude(args: string[], cwd: string, env: Record<string, string>): Promise<{code: number | null; ms: number; tail: string}> {
  const started = performance.now();
  // Only what the agent needs: nothing of this machine's own agent settings or keys reaches it.
  const child = spawn(claudeBinary(), [...args, "--max-turns", "1", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"],
    {cwd, env: {PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", ...env}, stdio: ["ignore", "pipe", "pipe"]});
  let out = "";
  const keep = (c: Buffer) => (out = (out + c.toString("utf8")).slice(-4000));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  clearTimeout(timer);
  return {code, ms: performance.now() - started, tail: out};
}

export interface ClaudeCodeRun {
  gguf: string;
  threads: number;
  llamaServer: string;
  say: (line: string) => void;
  /** Only these servers (both by default). */
  only?: readonly string[];
}

/** Per server name: the two turns. */
export async function runClaudeCode(o: ClaudeCodeRun): Promise<Map<string, AgentTurn[]>> {
  const version = (JSON.parse(readFileSync(join(ROOT, "node_modules/@anthropic-ai/claude-code/package.json"), "utf8")) as {version: string}).version;
  const shape: Shape = {gguf: o.gguf, threads: o.threads, regions: REGIONS, ctxPerRegion: CONTEXT};
  const templateDir = mkdtempSync(join(tmpdir(), "svc-bench-template-"));
  const template = join(templateDir, TEMPLATE);
  writeFileSync(template, bundledTemplate(TEMPLATE));
  const servers: {name: string; start: () => Promise<Server>}[] = [
    {name: "svc", start: () => startSvc(shape, 18751, {SVC_FORK: "1", SVC_FORK_MAP: "coding-agent", SVC_CHAT_TEMPLATE: template})},
    {name: "llama-server", start: () => startLlamaServer(o.llamaServer, shape, 18752,
      ["--override-kv", `llama.context_length=int:${CONTEXT}`, "--chat-template-file", template])},
  ];
  const results = new Map<string, AgentTurn[]>();
  for (const s of servers.filter((x) => !o.only || o.only.includes(x.name))) {
    const server = await s.start();
    const recorder = await startRecorder(server.url, (body) => ({...body, temperature: 0, max_tokens: Math.min(body.max_tokens ?? REPLY_CAP, REPLY_CAP)}));
    const dir = mkdtempSync(join(tmpdir(), "svc-bench-claude-"));
    try {
      const work = join(dir, "work");
      const home = join(dir, "home");
      mkdirSync(work);
      mkdirSync(home);
      writeFileSync(join(work, "notes.txt"), "Meeting at ten. Bring the quarterly figures.\n");
      writeFileSync(join(work, "build.sh"), "#!/bin/sh\nmake all\n");
      const env = {HOME: home, ANTHROPIC_BASE_URL: recorder.url, ANTHROPIC_API_KEY: "bench-key", IS_SANDBOX: "1", DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"};
      const turns: AgentTurn[] = [];
      for (const [t, task] of TASKS.entries()) {
        const from = recorder.exchanges.length;
        const run = await runClaude(t === 0 ? ["-p", task] : ["-p", "--continue", task], work, env);
        const requests = recorder.exchanges.slice(from).map((e) => ({url: e.url, status: e.status, ms: e.ms, ...usageOf(e)}));
        if (requests.length === 0 || requests.some((r) => r.status !== 200)) {
          throw new Error(`${s.name}: Claude Code ${version} turn ${t + 1} (exit ${run.code}): ${JSON.stringify(requests)}\n${run.tail}\n${server.log.slice(-15).join("\n")}`);
        }
        turns.push({wallS: run.ms / 1000, requests, exitCode: run.code});
        o.say(`(i) ${s.name}, Claude Code ${version} turn ${t + 1}: ${(run.ms / 1000).toFixed(1)} s (exit ${run.code}); ` +
          requests.map((r) => `${r.url} ${(r.ms / 1000).toFixed(1)} s, prompt ${r.prompt} (${r.cached} cached), reply ${r.output}`).join("; "));
      }
      results.set(s.name, turns);
      if (s.name === "svc") {
        const metrics = await (await fetch(`${server.url}/metrics`)).text();
        o.say("(i) svc time breakdown over both turns (seconds, summed over requests):");
        for (const line of metrics.split("\n")) if (/^svc:(phase_|seal|prefix_|keep|session)/.test(line)) o.say(`  ${line}`);
        for (const line of server.log.filter((l) => / request id=/.test(l))) o.say(`  ${line}`);
      }
    } finally {
      await recorder.close();
      await server.stop();
      rmSync(dir, {recursive: true, force: true});
    }
  }
  rmSync(templateDir, {recursive: true, force: true});
  return results;
}
