// The servers of bench:vs-llama-server: svc (npm start's entry) and llama-server built from the bundled
// llama.cpp, on the same GGUF, threads and regions. Each is started, waited for and stopped the same way.

import {spawn, type ChildProcess} from "node:child_process";
import {fileURLToPath} from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT_MS = 600_000;

export interface Server {
  name: string;
  url: string;
  child: ChildProcess;
  log: string[];
  stop(): Promise<void>;
}

export interface Shape {
  gguf: string;
  threads: number;
  regions: number;
  /** Positions per region. */
  ctxPerRegion: number;
}

async function waitHealthy(url: string, child: ChildProcess, log: string[]): Promise<void> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode} before it was ready:\n${log.slice(-20).join("\n")}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`not ready within ${START_TIMEOUT_MS / 1000} s`);
}

function launch(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, port: number): Promise<Server> {
  const child = spawn(cmd, args, {cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"]});
  const log: string[] = [];
  const keep = (b: Buffer) => {
    for (const line of b.toString("utf8").split("\n")) if (line) log.push(line);
    if (log.length > 5000) log.splice(0, log.length - 5000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
  };
  return waitHealthy(url, child, log).then(() => ({name, url, child, log, stop}), async (err: Error) => {
    await stop();
    throw new Error(`${name}: ${err.message}`);
  });
}

export function startSvc(shape: Shape, port: number, env: Record<string, string> = {}): Promise<Server> {
  return launch("svc", process.execPath, ["--import", "tsx", "src/main.ts"], {...process.env, UV_THREADPOOL_SIZE: "1", SVC_MODEL: shape.gguf, SVC_PORT: String(port),
    SVC_HOST: "127.0.0.1", SVC_THREADS: String(shape.threads), SVC_PARALLEL: String(shape.regions), SVC_CTX_SIZE: String(shape.ctxPerRegion),
    SVC_LOG_LEVEL: "info", SVC_PROGRESS: "lines", ...env}, port);
}

/** `extra`: more llama-server options (the remote-engine tests give one replica another chat template). */
export function startLlamaServer(binary: string, shape: Shape, port: number, extra: string[] = []): Promise<Server> {
  return launch("llama-server", binary, ["-m", shape.gguf, "--jinja", "-np", String(shape.regions), "-c", String(shape.ctxPerRegion * shape.regions),
    "-t", String(shape.threads), "-fa", "on", "--host", "127.0.0.1", "--port", String(port), "--no-webui", ...extra], {...process.env}, port);
}
