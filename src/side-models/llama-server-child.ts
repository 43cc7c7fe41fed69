// A llama-server that svc starts as its own child, under the child supervisor: for the main model when it reads
// pictures (SVC_MMPROJ: node-llama-cpp has no multimodal support, the llama-server built from the llama.cpp it
// bundles does), and for side models that need the same. It listens on loopback only, on a port chosen once, so a
// restart comes back at the same address; the media marker is pinned (LLAMA_MEDIA_MARKER) for the same reason.

import {spawn} from "node:child_process";
import {randomBytes} from "node:crypto";
import {createServer} from "node:net";
import type {Logger} from "../observability/log.ts";
import {ChildSupervisor} from "./child-supervisor.ts";

export interface LlamaServerChildOptions {
  /** The side model's id or "main": /health's child name. */
  name: string;
  /** How errors name it: "the main model's vision server". */
  label: string;
  binary: string;
  /** llama-server's arguments besides --host and --port. */
  args: string[];
  logger: Logger;
  /** A model of gigabytes may take minutes to load on a cold disk. */
  readyTimeoutMs?: number;
}

export interface LlamaServerChild {
  url: string;
  mediaMarker: string;
  supervisor: ChildSupervisor;
}

/** A free loopback port, asked of the kernel (closed again before llama-server binds it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

async function answersHealthy(url: string, signal: AbortSignal): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, {signal});
    await res.body?.cancel();
    // 503 while the model loads; 200 once it serves.
    return res.ok;
  } catch {
    return false;
  }
}

/** Starts the child and waits until it serves; a start that fails throws ChildFailedError with llama-server's last lines. */
export async function startLlamaServerChild(opts: LlamaServerChildOptions): Promise<LlamaServerChild> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const mediaMarker = `<__svc_media_${randomBytes(12).toString("hex")}__>`;
  const supervisor = new ChildSupervisor({
    name: opts.name,
    label: opts.label,
    logger: opts.logger,
    readyTimeoutMs: opts.readyTimeoutMs ?? 600_000,
    spawn: () => spawn(opts.binary, [...opts.args, "--host", "127.0.0.1", "--port", String(port)], {
      stdio: ["ignore", "ignore", "pipe"],
      env: {...process.env, LLAMA_MEDIA_MARKER: mediaMarker},
    }),
    probeReady: {ready: (signal) => answersHealthy(url, signal), pollMs: 100},
    health: {check: (signal) => answersHealthy(url, signal), intervalMs: 5_000, timeoutMs: 10_000},
    // SIGILL: the binary was built for instructions this CPU lacks; no restart cures it.
    fatal: (_code, signal) => signal === "SIGILL",
  });
  opts.logger.info("starting llama-server child", {child: opts.name, url, binary: opts.binary});
  await supervisor.start();
  return {url, mediaMarker, supervisor};
}
