// llama-server replicas for the remote-engine tests: the binary bench:vs-llama-server builds once from the
// llama.cpp source node-llama-cpp bundles (kept in the cache directory), on the default GGUF.

import {createServer} from "node:net";
import {join} from "node:path";
import {rmSync} from "node:fs";
import {mkdtemp} from "node:fs/promises";
import {homedir, tmpdir} from "node:os";
import {ensureLlamaServer} from "./llama-server/build.ts";
import {startLlamaServer, type Server} from "./llama-server/servers.ts";
import {DEFAULT_MAIN_MODEL_SPEC, resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";

export const REPLICA_SLOTS = 2;
export const REPLICA_CTX = 2048;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as {port: number}).port;
      s.close(() => resolve(port));
    });
  });
}

/** The GGUF file a model spec (SVC_MODEL's forms; default: the default model) resolves to, as the server resolves it. */
export async function ggufOf(spec: string = DEFAULT_MAIN_MODEL_SPEC): Promise<string> {
  const modelsDir = process.env.SVC_MODELS_DIR ?? join(homedir(), ".cache", "svc", "models");
  const resolved = await resolveModel(spec, {modelsDir, logger: createLogger("error"), progress: "lines"});
  return resolved.path;
}

/** A temporary directory for a replica's slot files, removed when the test process exits. */
async function slotDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-replica-slots-"));
  process.once("exit", () => rmSync(dir, {recursive: true, force: true}));
  return dir;
}

/**
 * Starts `count` replicas (2 slots of 2,048 positions, one thread each: the machine has two cores) of `model` (a GGUF path or
 * model spec; default: the default model). Each saves slot files (for named sessions) into a temporary directory of its own unless `slotFiles` is false.
 */
export async function startReplicas(count: number, extraArgs: string[] = [], slotFiles = true, model?: string): Promise<Server[]> {
  const build = ensureLlamaServer({log: (line) => process.stderr.write(`llama-server build: ${line}\n`)});
  const gguf = await ggufOf(model);
  const out: Server[] = [];
  for (let i = 0; i < count; i++) {
    const slotArgs = slotFiles ? ["--slot-save-path", `${await slotDir()}/`] : [];
    out.push(await startLlamaServer(build.binary, {gguf, threads: 1, regions: REPLICA_SLOTS, ctxPerRegion: REPLICA_CTX}, await freePort(),
      [...slotArgs, ...extraArgs]));
  }
  return out;
}
