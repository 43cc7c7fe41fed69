// Prompt-lookup speculation as the server runs it: three servers on the default model, SVC_SPECULATION=off,
// =on and =auto (flash attention on, the default), the cache off so every request is cold. Each of the 25
// prompts of bench/speculation-prompts.ts goes to the three servers in turn (the order rotates, and only one
// server computes at a time), greedy, up to 96 tokens, non-streamed. Per server: replies identical to off's,
// drafts proposed and accepted (timings.draft_n / draft_n_accepted), and generation speed (predicted_n over
// predicted_ms, so the prompt's evaluation is left out) with its ratio to off, for the 20 determinism prompts,
// the 5 copy prompts and all. auto's measured step cost is read from /health. One run.
//
//   npx tsx bench/speculation-server.ts        (or: npm run bench:speculation:server)
//
// Env: SPEC_MAX_TOKENS (96), SPEC_THREADS (the server default: all cores).

import {startServer, type RunningServer} from "../support/server.ts";
import {COPY_PROMPTS, DETERMINISM_PROMPTS} from "./speculation-prompts.ts";

const MAX_TOKENS = Number(process.env.SPEC_MAX_TOKENS ?? 96);
type Group = "det" | "copy";
const MODES = ["off", "on", "auto"] as const;
type Mode = (typeof MODES)[number];

interface Tally {
  tokens: Record<Group, number>;
  ms: Record<Group, number>;
  same: Record<Group, number>;
  draft: number;
  accepted: number;
  draftedReplies: number;
}

async function ask(server: RunningServer, messages: unknown[]) {
  const r = await server.client.chat.completions.create({model: "m", messages: messages as never, max_tokens: MAX_TOKENS, temperature: 0});
  const t = (r as unknown as {timings: {predicted_n: number; predicted_ms: number; draft_n: number; draft_n_accepted: number}}).timings;
  return {text: r.choices[0]!.message.content ?? "", ...t};
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const env = {SVC_PROMPT_CACHE: "0", SVC_PARALLEL: "1", SVC_CTX_SIZE: "1024", ...(process.env.SPEC_THREADS ? {SVC_THREADS: process.env.SPEC_THREADS} : {})};
  const servers = {} as Record<Mode, RunningServer>;
  for (const m of MODES) servers[m] = await startServer({...env, SVC_SPECULATION: m});
  try {
    const health = await (await fetch(`${servers.auto.url}/health`)).json() as {engine: {threads: number; speculation: {step_cost: number}}};
    const stepCost = health.engine.speculation.step_cost;
    console.log(`svc speculation (server) bench: ${DETERMINISM_PROMPTS.length + COPY_PROMPTS.length} prompts (${COPY_PROMPTS.length} copy), ` +
      `greedy, up to ${MAX_TOKENS} tokens, ${health.engine.threads} thread(s), cache off; auto measured a 2-token step at ${stepCost}x a 1-token step ` +
      `(drafts pay when the hit rate is above ${(stepCost - 1).toFixed(2)})`);
    const zero = (): Record<Group, number> => ({det: 0, copy: 0});
    const tally = Object.fromEntries(MODES.map((m) => [m, {tokens: zero(), ms: zero(), same: zero(), draft: 0, accepted: 0, draftedReplies: 0}])) as Record<Mode, Tally>;
    await ask(servers.off, DETERMINISM_PROMPTS[0]!.messages); // warm-up, not counted
    const prompts = [...DETERMINISM_PROMPTS, ...COPY_PROMPTS];
    for (const [i, p] of prompts.entries()) {
      const order = MODES.map((_, k) => MODES[(k + i) % MODES.length]!);
      const out = {} as Record<Mode, Awaited<ReturnType<typeof ask>>>;
      for (const m of order) out[m] = await ask(servers[m], p.messages);
      for (const m of MODES) {
        const t = tally[m];
        const o = out[m];
        // The first token comes with the prompt's evaluation: predicted_ms runs from it to the last.
        t.tokens[p.group] += Math.max(0, o.predicted_n - 1);
        t.ms[p.group] += o.predicted_ms;
        if (o.text === out.off.text) t.same[p.group]++;
        t.draft += o.draft_n;
        t.accepted += o.draft_n_accepted;
        if (o.draft_n > 0) t.draftedReplies++;
      }
      console.log(`  ${p.name.padEnd(11)} gen ${String(out.off.predicted_n).padStart(3)}  ` +
        MODES.map((m) => `${m}: ${out[m].text === out.off.text ? "same" : "DIFFERENT"} ${out[m].draft_n_accepted}/${out[m].draft_n}`).join("  "));
    }
    const tps = (t: Tally, g: Group | "all") => {
      const tok = g === "all" ? t.tokens.det + t.tokens.copy : t.tokens[g];
      const ms = g === "all" ? t.ms.det + t.ms.copy : t.ms[g];
      return (tok * 1000) / ms;
    };
    const off = tally.off;
    console.log("");
    console.log(`| SVC_SPECULATION | = off (det/${DETERMINISM_PROMPTS.length}, copy/${COPY_PROMPTS.length}) | drafted replies | accepted / proposed | ` +
      "tok/s det | tok/s copy | tok/s all | ratio det | ratio copy | ratio all |");
    console.log("|---|---|---|---|---|---|---|---|---|---|");
    for (const m of MODES) {
      const t = tally[m];
      console.log(`| ${m} | ${t.same.det}, ${t.same.copy} | ${t.draftedReplies} | ${t.accepted} / ${t.draft} | ${tps(t, "det").toFixed(1)} | ` +
        `${tps(t, "copy").toFixed(1)} | ${tps(t, "all").toFixed(1)} | ${(tps(t, "det") / tps(off, "det")).toFixed(2)} | ` +
        `${(tps(t, "copy") / tps(off, "copy")).toFixed(2)} | ${(tps(t, "all") / tps(off, "all")).toFixed(2)} |`);
    }
    console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    for (const m of MODES) await servers[m].stop();
  }
}

await main();
