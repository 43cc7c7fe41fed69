// Long prompts against llama-server, one server's turn at a time, interleaved by length: what bench/long-prompts.ts
// prints on its own and bench/vs-llama-server.ts's workload (g) takes its rows from. For each length: one cold
// request of that many prompt tokens, then a follow-up that adds 16 new tokens after the reply; 8 tokens generated each.

import {request} from "node:http";
import {startLlamaServer, startSvc, type Server, type Shape} from "../../support/llama-server/servers.ts";

const WORDS = ("the module reads a request, checks each field against the schema, and returns an error that names the field " +
  "when a value is missing or has the wrong type; otherwise it builds the reply from the cache, the session and the model").split(" ");

/** A document of about `tokens` tokens (SmolLM2's tokenizer: about 1.84 a word here), numbered so no two lines repeat. */
function document(tokens: number, salt: string): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < tokens; i++) {
    const line = `${salt} line ${i}: ${WORDS.slice(i % 7, (i % 7) + 14).join(" ")} (${(i * 7919) % 10007}).`;
    lines.push(line);
    n += Math.round(line.split(" ").length * 1.84);
  }
  return lines.join("\n");
}

export interface Turn {
  promptTokens: number;
  cached: number;
  prefillTps: number;
  decodeTps: number;
  wallS: number;
  /** The server's own split of the wall: prompt evaluation and generation (timings). */
  promptMs: number;
  predictedMs: number;
  text: string;
}

/**
 * A POST without a client-side time limit: a cold prefill of 16k tokens takes minutes on 2 cores, longer than fetch's
 * fixed 300 s wait for response headers.
 */
function postJson(url: string, payload: unknown): Promise<{status: number; body: unknown}> {
  return new Promise((resolve, reject) => {
    const req = request(url, {method: "POST", headers: {"content-type": "application/json"}}, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        try {
          resolve({status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8"))});
        } catch (err) {
          reject(err);
        }
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(JSON.stringify(payload));
  });
}

async function chat(server: Server, messages: {role: string; content: string}[]): Promise<Turn> {
  const start = performance.now();
  const res = await postJson(`${server.url}/v1/chat/completions`, {model: "bench", messages, max_tokens: 8, temperature: 0});
  const body = res.body as {choices: {message: {content: string}}[]; usage: {prompt_tokens: number; prompt_tokens_details?: {cached_tokens?: number}};
    timings: {prompt_per_second: number; predicted_per_second: number; prompt_ms: number; predicted_ms: number; cache_n?: number}};
  if (res.status !== 200) throw new Error(`${server.name}: HTTP ${res.status} ${JSON.stringify(body)}`);
  return {promptTokens: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details?.cached_tokens ?? body.timings.cache_n ?? 0,
    prefillTps: body.timings.prompt_per_second, decodeTps: body.timings.predicted_per_second, wallS: (performance.now() - start) / 1000,
    promptMs: body.timings.prompt_ms, predictedMs: body.timings.predicted_ms, text: body.choices[0]!.message.content};
}

export interface LongPromptRun {
  gguf: string;
  threads: number;
  regions: number;
  lengths: readonly number[];
  /** Extra svc columns: each a set of SVC_* settings. */
  variants?: readonly Record<string, string>[];
  llamaServer: string;
  say: (line: string) => void;
}

/** Context per region that holds the longest prompt and its follow-up (a power of two, at least 8,192). */
export function contextFor(lengths: readonly number[]): number {
  return Math.max(8192, ...lengths.map((l) => 2 ** Math.ceil(Math.log2(l + 512))));
}

/** Per server label ("svc", "svc <settings>", "llama-server"), per length: the cold turn and its follow-up. */
export async function runLongPrompts(o: LongPromptRun): Promise<Map<string, Map<number, {cold: Turn; follow: Turn}>>> {
  const ctxPerRegion = contextFor(o.lengths);
  const shape: Shape = {gguf: o.gguf, threads: o.threads, regions: o.regions, ctxPerRegion};
  // Past the training length llama-server caps a slot at it unless told the model's length is larger.
  const lift = ctxPerRegion > 8192 ? ["--override-kv", `llama.context_length=int:${ctxPerRegion}`] : [];
  const variants = [{}, ...(o.variants ?? [])];
  const servers: {label: string; start: () => Promise<Server>}[] = [
    ...variants.map((env, i) => ({label: i === 0 ? "svc" : `svc ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")}`,
      start: () => startSvc(shape, 18741 + i, env)})),
    {label: "llama-server", start: () => startLlamaServer(o.llamaServer, shape, 18740, lift)},
  ];
  const results = new Map<string, Map<number, {cold: Turn; follow: Turn}>>();
  // One server at a time (a long prefill takes both cores), lengths interleaved across servers.
  for (const length of o.lengths) {
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
        o.say(`${s.label} @${cold.promptTokens}: prefill ${cold.prefillTps.toFixed(1)} tok/s, decode ${cold.decodeTps.toFixed(1)} tok/s, ` +
          `follow-up ${follow.wallS.toFixed(2)} s (${follow.cached} of ${follow.promptTokens} reused; prompt ${follow.promptMs.toFixed(0)} ms, ` +
          `generation ${follow.predictedMs.toFixed(0)} ms)`);
      } finally {
        await server.stop();
      }
    }
  }
  return results;
}
