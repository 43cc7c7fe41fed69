// Decode speed under a JSON schema vs free text, same prompts, one server, in one run. The grammar
// sampler checks each sampled token against the grammar and only scans the whole vocabulary when the
// token is rejected, so the cost depends on how often the model wants to leave the schema. Prints the
// median server-reported decode tok/s of each, and the ratio (target >= 0.9).
//
//   npx tsx bench/schema.ts        (or: npm run bench:schema)

import {availableParallelism} from "node:os";
import {CORPUS} from "../test/fixtures/schemas/corpus.ts";
import {startServer} from "../support/server.ts";

const NAMES = ["invoice", "user-profile", "event", "step-plan", "entities", "product", "chat-turns", "search-query"];
const ROUNDS = 3;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const server = await startServer({SVC_PARALLEL: "1", SVC_PROMPT_CACHE: "0"});
try {
  const run = async (body: Record<string, unknown>) => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify(body), signal: AbortSignal.timeout(120_000)});
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    const json = (await res.json()) as {timings: {predicted_per_second: number; predicted_n: number}};
    return json.timings;
  };
  const free: number[] = [];
  const constrained: number[] = [];
  const tokens = {free: 0, constrained: 0};
  for (let round = 0; round < ROUNDS + 1; round++) {
    for (const name of NAMES) {
      const entry = CORPUS.find((e) => e.name === name)!;
      const base = {messages: [{role: "system", content: "Answer with JSON only."}, {role: "user", content: entry.prompt}], max_tokens: 128, temperature: 0};
      const withSchema = {...base, response_format: {type: "json_schema", json_schema: {name, schema: entry.schema}}};
      // Alternate the order so drift on a shared machine hits both sides alike; round 0 is a warm-up.
      const pair = round % 2 === 0 ? [await run(base), await run(withSchema)] : [await run(withSchema), await run(base)].reverse();
      if (round === 0) continue;
      const [f, c] = pair;
      if (f!.predicted_n > 1) {
        free.push(f!.predicted_per_second);
        tokens.free += f!.predicted_n;
      }
      if (c!.predicted_n > 1) {
        constrained.push(c!.predicted_per_second);
        tokens.constrained += c!.predicted_n;
      }
    }
  }
  const f = median(free);
  const c = median(constrained);
  console.log("svc structured-output benchmark");
  console.log(`machine: ${availableParallelism()} cores, node ${process.version}; ${NAMES.length} prompts x ${ROUNDS} rounds, greedy, max_tokens 128, one region, prompt cache off`);
  console.log(`free text:   median ${f.toFixed(1)} tok/s over ${free.length} replies (${tokens.free} tokens)`);
  console.log(`with schema: median ${c.toFixed(1)} tok/s over ${constrained.length} replies (${tokens.constrained} tokens)`);
  console.log(`ratio schema / free: ${(c / f).toFixed(3)}  (target >= 0.9: ${c / f >= 0.9 ? "PASS" : "FAIL"})`);
} finally {
  await server.stop();
}
