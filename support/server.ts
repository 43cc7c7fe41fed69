// Starts the real server (npm start's entry) as a child process on a free port and hands tests its address, its
// log lines and an OpenAI client pointed at it. A server runs the test model (support/test-model.ts: the default
// model's architecture, tokenizer and template at a tiny size) unless its settings name a model: a test whose
// assertion needs a trained model's judgement asks for one with `trainedModel()` and says why in a line.

import {spawn, type ChildProcess} from "node:child_process";
import {appendFileSync} from "node:fs";
import {request} from "node:http";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import OpenAI from "openai";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {REPLICA_SLOTS, startReplicas} from "./llama-replicas.ts";
import {testModelPath} from "./test-model.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface RunningServer {
  url: string;
  port: number;
  /** The server's log lines (for a shared server: those written since this file took it). */
  readonly logs: string[];
  client: OpenAI;
  stop(): Promise<void>;
  /** Resolves when a log line matching re appears (or rejects after timeoutMs). */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
}

/** A server of a test's own: its process, for tests of signals and exit codes. */
export interface OwnServer extends RunningServer {
  /** The started process (for `npm start`, npm itself). */
  process: ChildProcess;
  /** The exit code, once the started process has exited (null when a signal ended it). */
  exited: Promise<number | null>;
}

/** How a server is started: by default `serverArgs()` under this process's node. */
export interface Launch {
  command: string;
  args: string[];
}

/**
 * The server's entry as node's arguments: the build scripts/test.mjs makes before the server tiers (TEST_SERVER_DIST
 * names its folder, .test-dist),
 * which starts without compiling TypeScript; else the source through tsx (a test file run on its own).
 */
export function serverArgs(): string[] {
  return process.env.TEST_SERVER_DIST ? [`${process.env.TEST_SERVER_DIST}/main.js`] : ["--import", "tsx", "src/main.ts"];
}

export function serverEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {...process.env};
  delete base.TEST_SERVER_POOL;
  // UV_THREADPOOL_SIZE as `npm start` sets it (see docs/performance.md).
  // Test files that run two at a time (TEST_SHARED_CORES, set by scripts/test.mjs) each get one core: two servers of
  // two engine threads each on two cores make llama.cpp's threads wait on each other, many times slower.
  const cores = process.env.TEST_SHARED_CORES ? {SVC_THREADS: "1"} : {};
  return {...base, UV_THREADPOOL_SIZE: "1", SVC_PORT: "0", SVC_CTX_SIZE: "2048", SVC_LOG_LEVEL: "info", SVC_PROGRESS: "lines", ...cores, ...env};
}

export const LISTENING = /listening on http:\/\/[^:]+:(\d+)/;

/**
 * Notes a server start in the run's start record (TEST_START_RECORD, set by scripts/test.mjs), which prints after
 * each tier how many servers its files started and how long they took to listen: where a tier's minutes go.
 */
export function recordStart(kind: "own" | "shared", startedAt: number): void {
  const record = process.env.TEST_START_RECORD;
  if (record) appendFileSync(record, `${JSON.stringify({kind, ms: Math.round(performance.now() - startedAt), file: process.argv[1] ?? ""})}\n`);
}

/** TEST_REPLICAS: how many llama-server replicas every server runs on (0: the in-process engine). */
export const TEST_REPLICAS = Number(process.env.TEST_REPLICAS ?? 0);

/** The regions a server started with SVC_PARALLEL=`parallel` has: its own, or on replicas their slots. */
export function expectedRegions(parallel: number): number {
  return TEST_REPLICAS ? TEST_REPLICAS * REPLICA_SLOTS : parallel;
}

/** Replica URLs per GGUF (the default model's under ""). */
const replicaUrls = new Map<string, Promise<string>>();

/**
 * TEST_REPLICAS=N runs every server this harness starts on N llama-server replicas (SVC_ENGINE) of the server's
 * SVC_MODEL (a scripted model's replicas serve that file), started once per test file and model: the dialect
 * suites against the remote engine (`npm run test:remote`).
 */
async function remoteEnv(model: string | undefined): Promise<Record<string, string>> {
  const n = TEST_REPLICAS;
  if (!n) return {};
  const key = model ?? "";
  if (!replicaUrls.has(key)) replicaUrls.set(key, startReplicas(n, [], true, model).then((servers) => {
    // Not holding the test file's process open: it exits when its tests are done, and takes the replicas with it.
    for (const s of servers) {
      s.child.unref();
      for (const stream of [s.child.stdout, s.child.stderr]) (stream as unknown as {unref?: () => void} | null)?.unref?.();
    }
    process.once("exit", () => {
      for (const s of servers) s.child.kill("SIGKILL");
    });
    return servers.map((s) => s.url).join(",");
  }));
  return {SVC_ENGINE: await replicaUrls.get(key)!};
}

/**
 * Settings for a server on the default trained model (SmolLM2-135M-Instruct), for the tests whose assertions need a
 * trained model (a sensible answer, an unforced tool call, label probabilities that mean something): each says why.
 */
export function trainedModel(env: Record<string, string> = {}): Record<string, string> {
  return {SVC_MODEL: DEFAULT_MAIN_MODEL_SPEC, ...env};
}

/** The settings with SVC_MODEL set: the test model unless they name one. */
export async function withModel(env: Record<string, string>): Promise<Record<string, string>> {
  return env.SVC_MODEL ? env : {SVC_MODEL: await testModelPath(), ...env};
}

/** A server of this file's own, stopped by `stop()`; for tests that need a fresh server's state or settings of their own. */
export async function startServer(settings: Record<string, string> = {}, timeoutMs = 180_000,
  launch: Launch = {command: process.execPath, args: serverArgs()}): Promise<OwnServer> {
  const startedAt = performance.now();
  const env = await withModel(settings);
  const remote = await remoteEnv(env.SVC_MODEL);
  const child = spawn(launch.command, launch.args, {
    cwd: ROOT,
    env: serverEnv({...remote, ...env}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: string[] = [];
  const listeners = new Set<(line: string) => void>();
  let buffer = "";
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      logs.push(line);
      for (const l of listeners) l(line);
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);

  const waitForLog = (re: RegExp, ms = 30_000) =>
    new Promise<string>((resolve, reject) => {
      const hit = logs.find((l) => re.test(l));
      if (hit) return resolve(hit);
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no log line matching ${re} within ${ms} ms; last lines:\n${logs.slice(-10).join("\n")}`));
      }, ms);
      const check = (line: string) => {
        if (re.test(line)) {
          clearTimeout(timer);
          listeners.delete(check);
          resolve(line);
        }
      };
      listeners.add(check);
    });

  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // Not waitForLog: its timer would outlive a server that exits at start (a refused setting), holding the
  // test file's process open for the whole timeout after its tests are done.
  const line = await new Promise<string>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      listeners.delete(check);
    };
    const timer = setTimeout(() => {
      done();
      // A server that never listened is stopped here: left running, it would hold the test file's process open.
      child.kill("SIGKILL");
      reject(new Error(`no listening line within ${timeoutMs} ms; last lines:\n${logs.slice(-10).join("\n")}`));
    }, timeoutMs);
    const check = (l: string) => {
      if (!LISTENING.test(l)) return;
      done();
      resolve(l);
    };
    const hit = logs.find((l) => LISTENING.test(l));
    if (hit) {
      done();
      return resolve(hit);
    }
    listeners.add(check);
    void exited.then((code) => {
      done();
      reject(new Error(`server exited with code ${code} before listening:\n${logs.join("\n")}`));
    });
  });
  recordStart("own", startedAt);
  const port = Number(LISTENING.exec(line)![1]);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    logs,
    client: clientFor(url, env),
    waitForLog,
    process: child,
    exited,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

export function clientFor(url: string, env: Record<string, string>): OpenAI {
  return new OpenAI({baseURL: `${url}/v1`, apiKey: env.SVC_API_KEY ?? "unused", maxRetries: 0, timeout: 120_000});
}

/** Raw POST with a JSON (or raw string/buffer) body; returns status, headers and parsed body (or text). */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{status: number; headers: Headers; body: any; text: string}> {
  const raw = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  const res = await fetch(url, {method: "POST", headers: {"content-type": "application/json", ...headers}, body: raw as unknown as BodyInit});
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return {status: res.status, headers: res.headers, body: parsed, text};
}

export async function get(url: string, headers: Record<string, string> = {}): Promise<{status: number; headers: Headers; body: any}> {
  const res = await fetch(url, {headers});
  const text = await res.text();
  return {status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined};
}

/** How many replies the server has sealed so far (/cache pool.seals). */
export async function sealCount(server: RunningServer, headers: Record<string, string> = {}): Promise<number> {
  return (await get(`${server.url}/cache`, headers)).body.pool.seals as number;
}

export type ReuseMatch = "rows" | "pieces" | "prefix";

/**
 * How the server matches reused KV (/health prompt_cache.reuse_match): "rows" (replies reusable as decoded), "pieces" (sealed)
 * or "prefix" (remote replicas: reusable as decoded, up to the first differing token).
 */
export async function reuseMatch(server: RunningServer, headers: Record<string, string> = {}): Promise<ReuseMatch> {
  return (await get(`${server.url}/health`, headers)).body.prompt_cache.reuse_match;
}

/**
 * How many tokens of a finished request a later prompt can reuse: its prompt and every reply token the model
 * evaluated. A reply cut by its token budget ends with a token that was sampled and never fed back: sealing (reuse
 * matched by pieces) evaluates it, a reply kept as decoded (matched by rows, or by prefix on a replica) does not have it.
 */
export function reusableEnd(match: ReuseMatch, promptTokens: number, replyTokens: number, cutByBudget: boolean): number {
  return promptTokens + replyTokens - (match !== "pieces" && cutByBudget ? 1 : 0);
}

/**
 * Waits until the last reply can be reused. Matched by rows or prefix, a reply is reusable as soon as it is answered (nothing
 * to wait for). Matched by pieces, a reply that no session keeps is sealed once the engine is idle
 * (src/engine/llama/region-pool.ts): this waits until the server has sealed `atLeast` replies in all, as a
 * person's next turn would; a turn sent at once re-evaluates the reply instead.
 */
export async function sealedReplies(server: RunningServer, atLeast: number, headers: Record<string, string> = {}): Promise<void> {
  if ((await reuseMatch(server, headers)) !== "pieces") return;
  for (let t = 0; t < 200; t++) {
    if ((await sealCount(server, headers)) >= atLeast) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the server did not seal ${atLeast} replies within 10 s`);
}

/** Reads an SSE response to the end and returns its raw text and the parsed `data:` payloads. */
export async function readSse(res: Response): Promise<{raw: string; data: any[]}> {
  const raw = await res.text();
  const data: any[] = [];
  for (const block of raw.split("\n\n")) {
    for (const line of block.split("\n")) {
      if (!line.startsWith("data: ")) continue;
      const payload = line.slice(6);
      data.push(payload === "[DONE]" ? "[DONE]" : JSON.parse(payload));
    }
  }
  return {raw, data};
}

/** A generation reply's `timings`: nine numbers, and the routing decision when the server runs on replicas (TEST_REPLICAS). */
export const TIMING_FIELDS = ["prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_second", "cache_n", "draft_n", "draft_n_accepted",
  ...(TEST_REPLICAS ? ["route"] : [])];

/** POST without fetch's 300-second header timeout: a prompt of thousands of tokens on a busy 2-core machine can take longer. */
export function longPost(url: string, body: unknown): Promise<{status: number; body: any; text: string}> {
  return new Promise((resolve, reject) => {
    const req = request(url, {method: "POST", headers: {"content-type": "application/json"}}, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({status: res.statusCode ?? 0, body: JSON.parse(text), text}));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
