// Prompt cache: (1) time to first token of turn 2 of a ~2,000-token conversation, resumed after turn 1's
// sealed reply, against the cold time to first token of the same prompt on a server with the cache off
// (target: warm ≤ 5% of cold); (2) a scripted multi-user chat load (more users than regions, several turns
// each, interleaved), without and with the disk tier: hit rate, token hit rate and prompt tokens saved, from
// /cache. Measured in one run.
//
//   npx tsx bench/prompt-cache.ts        (or: npm run bench:cache)

import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {startServer, type RunningServer} from "../support/server.ts";

type Msg = {role: "system" | "user" | "assistant"; content: string};

const FACTS = Array.from({length: 100}, (_, i) =>
  `Note ${i + 1}: the ${["north", "south", "east", "west"][i % 4]} field grows ${["barley", "oats", "beans", "clover", "rye"][i % 5]} and is watered every ${2 + (i % 5)} days.`);
const LONG_USER = `Here are my farm notes.\n${FACTS.join("\n")}\nSummarise which fields need water most often.`;

async function ttftMs(server: RunningServer, messages: Msg[]): Promise<{ms: number; cached: number; prompt: number}> {
  const t0 = performance.now();
  const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({messages, max_tokens: 8, temperature: 0, stream: true, stream_options: {include_usage: true}})});
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let first = 0;
  let text = "";
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    text += decoder.decode(value, {stream: true});
    if (!first && /"content":"[^"]/.test(text)) first = performance.now();
  }
  const frames = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)) as {usage?: any});
  const usage = frames.map((f) => f.usage).filter(Boolean).at(-1);
  return {ms: (first || performance.now()) - t0, cached: usage?.prompt_tokens_details?.cached_tokens ?? 0, prompt: usage?.prompt_tokens ?? 0};
}

async function reply(server: RunningServer, messages: Msg[], max: number): Promise<string> {
  const res = await server.client.chat.completions.create({model: "m", messages, max_tokens: max, temperature: 0});
  return res.choices[0]!.message.content!;
}

async function turnTwo(): Promise<void> {
  const turn1: Msg[] = [{role: "system", content: "You are a helpful farm assistant."}, {role: "user", content: LONG_USER}];
  const warmServer = await startServer({SVC_CTX_SIZE: "4096", SVC_PARALLEL: "2"});
  let warm: {ms: number; cached: number; prompt: number};
  let turn2: Msg[];
  try {
    const r1 = await reply(warmServer, turn1, 48);
    turn2 = [...turn1, {role: "assistant", content: r1}, {role: "user", content: "Which field should I check first tomorrow?"}];
    await new Promise((r) => setTimeout(r, 1500)); // the reply is sealed while the user reads it
    warm = await ttftMs(warmServer, turn2);
  } finally {
    await warmServer.stop();
  }
  const coldServer = await startServer({SVC_CTX_SIZE: "4096", SVC_PARALLEL: "1", SVC_PROMPT_CACHE: "0"});
  let cold: {ms: number; cached: number; prompt: number};
  try {
    await reply(coldServer, [{role: "user", content: "Hi"}], 2); // warm up the engine itself
    cold = await ttftMs(coldServer, turn2);
  } finally {
    await coldServer.stop();
  }
  console.log(`turn 2 of a ${warm.prompt}-token conversation: warm TTFT ${warm.ms.toFixed(0)} ms (cached ${warm.cached} tokens), ` +
    `cold TTFT ${cold.ms.toFixed(0)} ms (cache off)`);
  console.log(`  warm / cold = ${(warm.ms / cold.ms).toFixed(3)}  (target <= 0.05)`);
}

async function multiUser(diskDir: string | null): Promise<void> {
  const USERS = 6;
  const TURNS = 4;
  const server = await startServer({SVC_CTX_SIZE: "2048", SVC_PARALLEL: "4", ...(diskDir ? {SVC_CACHE_DIR: diskDir} : {})});
  try {
    const system = "You are a friendly assistant for a hardware store. Answer in one or two sentences and suggest one product.";
    const histories: Msg[][] = Array.from({length: USERS}, () => [{role: "system", content: system}]);
    const questions = ["I need to hang a heavy mirror.", "What about the wall plugs?", "Which drill bit size?", "Anything for the dust?"];
    const t0 = performance.now();
    for (let turn = 0; turn < TURNS; turn++) {
      // Users take turns two at a time, so conversations interleave and some are evicted between turns.
      for (let u = 0; u < USERS; u += 2) {
        await Promise.all([u, u + 1].map(async (k) => {
          const h = histories[k]!;
          h.push({role: "user", content: `${questions[turn]} (customer ${k})`});
          h.push({role: "assistant", content: await reply(server, h, 24)});
        }));
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const c = (await (await fetch(`${server.url}/cache`)).json()) as Record<string, any>;
    console.log(`multi-user chat, ${diskDir ? "with" : "without"} the disk tier: ${USERS} users x ${TURNS} turns on ${c.pool.positions / 2048} regions in ${seconds.toFixed(1)} s`);
    console.log(`  hit rate ${c.hit_rate}, token hit rate ${c.token_hit_rate}, prompt tokens saved ${c.tokens_saved} of ${c.prompt_tokens}`);
    console.log(`  evicted ${c.evicted}, dropped ${c.pool.dropped}, relocated ${c.pool.relocated}, disk hits ${c.disk.hits}, miss reasons ${JSON.stringify(c.miss_reasons)}`);
  } finally {
    await server.stop();
  }
}

await turnTwo();
await multiUser(null);
const dir = await mkdtemp(join(tmpdir(), "svc-bench-"));
try {
  await multiUser(dir);
} finally {
  await rm(dir, {recursive: true, force: true});
}
