// Starts the real server (npm start's entry) as a child process on a free port, on the real default model,
// and hands tests its address, its log lines and an OpenAI client pointed at it.

import {spawn, type ChildProcess} from "node:child_process";
import {request} from "node:http";
import {fileURLToPath} from "node:url";
import OpenAI from "openai";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface RunningServer {
  url: string;
  port: number;
  logs: string[];
  client: OpenAI;
  child: ChildProcess;
  stop(): Promise<void>;
  /** Resolves when a log line matching re appears (or rejects after timeoutMs). */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
}

export async function startServer(env: Record<string, string> = {}, timeoutMs = 180_000): Promise<RunningServer> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: {...process.env, SVC_PORT: "0", SVC_CTX_SIZE: "2048", SVC_LOG_LEVEL: "info", SVC_PROGRESS: "lines", ...env},
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
  const listening = waitForLog(/listening on http:\/\/[^:]+:(\d+)/, timeoutMs);
  const line = await Promise.race([listening, exited.then((code) => {
    throw new Error(`server exited with code ${code} before listening:\n${logs.join("\n")}`);
  })]);
  const port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(line)![1]);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    logs,
    child,
    client: new OpenAI({baseURL: `${url}/v1`, apiKey: env.SVC_API_KEY ?? "unused", maxRetries: 0, timeout: 120_000}),
    waitForLog,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
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

export const TIMING_FIELDS = ["prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_second", "cache_n", "draft_n", "draft_n_accepted"];

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
