// Pictures in chat: svc with SVC_MMPROJ (its own llama-server child behind the remote engine) against that
// llama-server alone, on the same GGUF, projector, threads and slots, interleaved request by request (one server
// works while the other waits). The model is SmolLM2-135M-Instruct with the generated test projector at its width
// (no registry ships real vision weights small enough for this machine): the tower is tiny, so the figures are
// svc's own cost around a picture request (decoding and checking the picture, counting its positions, the text
// prompt with the media marker), not the vision encoder's.
//   npm run bench:vision            (BENCH_QUICK=1 for fewer rounds)
//
// Workloads, each a streamed chat at temperature 0 with 32 tokens of reply:
//   cold      a new picture every request (nothing cached)
//   repeat    the same conversation again (the picture and the text resume from the cache)
//   follow-up the previous turn and its reply sent back with a new question (resumes past the picture)

import {ensureLlamaServer} from "../support/llama-server/build.ts";
import {freePort} from "../support/llama-replicas.ts";
import {startLlamaServer, startSvc, type Server, type Shape} from "../support/llama-server/servers.ts";
import {testPng, testProjectorPath} from "../support/test-projector.ts";
import {DEFAULT_MAIN_MODEL_SPEC, defaultModelsDir, resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";

const QUICK = process.env.BENCH_QUICK === "1";
const ROUNDS = QUICK ? 4 : 10;
const REPLY = 32;
const say = (line: string) => process.stderr.write(`${line}\n`);

type Part = {type: "text"; text: string} | {type: "image_url"; image_url: {url: string}};
type Message = {role: string; content: string | Part[]};

/** A picture of its own per seed (a ramp whose colours move with the seed), 320x240 like a small screenshot. */
function picture(seed: number): string {
  const png = testPng(320, 240, (x, y) => [(x * 0.8 + seed * 37) % 256, (y + seed * 91) % 256, ((x + y) / 2 + seed * 13) % 256]);
  return `data:image/png;base64,${png.toString("base64")}`;
}

/** One streamed chat: time to the first content and in all, and the reply. */
async function chat(base: string, messages: Message[]): Promise<{ttftMs: number; totalMs: number; text: string}> {
  const started = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({model: "m", messages, max_tokens: REPLY, temperature: 0, stream: true})});
  if (!res.ok || !res.body) throw new Error(`${base}: HTTP ${res.status} ${await res.text()}`);
  let ttftMs = 0;
  let text = "";
  let buffered = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += Buffer.from(chunk).toString("utf8");
    let end: number;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.split("\n").find((l) => l.startsWith("data: "))?.slice(6);
      if (!data || data === "[DONE]") continue;
      const delta = (JSON.parse(data) as {choices?: {delta?: {content?: string}}[]}).choices?.[0]?.delta?.content;
      if (delta) {
        if (ttftMs === 0) ttftMs = performance.now() - started;
        text += delta;
      }
    }
  }
  return {ttftMs, totalMs: performance.now() - started, text};
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const build = ensureLlamaServer({log: (l) => say(`llama-server build: ${l}`)});
  const gguf = (await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: defaultModelsDir(), logger: createLogger("warn"), progress: "lines"})).path;
  const projector = await testProjectorPath(gguf);
  const shape: Shape = {gguf, threads: 2, regions: 1, ctxPerRegion: 4096};
  const llama = await startLlamaServer(build.binary, shape, await freePort(), ["--mmproj", projector]);
  const svc = await startSvc(shape, await freePort(), {SVC_MMPROJ: projector});
  const servers: Server[] = [svc, llama];
  const times = new Map<string, number[]>();
  const note = (server: Server, workload: string, ms: number) => {
    const key = `${server.name} ${workload}`;
    times.set(key, [...times.get(key) ?? [], ms]);
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which server goes first, so neither always follows the other's work.
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const turn: Message = {role: "user", content: [{type: "image_url", image_url: {url: picture(round * 2 + (server === svc ? 0 : 1))}},
          {type: "text", text: "What is in this picture? Describe its colours."}]};
        const cold = await chat(server.url, [turn]);
        note(server, "cold", cold.ttftMs);
        const repeat = await chat(server.url, [turn]);
        note(server, "repeat", repeat.ttftMs);
        const follow = await chat(server.url, [turn, {role: "assistant", content: repeat.text}, {role: "user", content: "And which colour is brightest?"}]);
        note(server, "follow-up", follow.ttftMs);
        note(server, "cold total", cold.totalMs);
      }
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
  say(`\nvision: SmolLM2-135M + test projector, ${shape.threads} threads, ${ROUNDS} rounds interleaved; medians in ms (ratio: llama-server's time over svc's, above 1 = svc faster)`);
  for (const workload of ["cold", "repeat", "follow-up", "cold total"]) {
    const a = median(times.get(`svc ${workload}`)!);
    const b = median(times.get(`llama-server ${workload}`)!);
    say(`  ${workload.padEnd(11)} ${workload.endsWith("total") ? "total" : "TTFT "}  svc ${a.toFixed(1).padStart(7)}  llama-server ${b.toFixed(1).padStart(7)}  ratio ${(b / a).toFixed(2)}`);
  }
}

await main();
