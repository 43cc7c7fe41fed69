// The server's side of the image engine process (image-worker.py): sends it one picture at a time through the child
// supervisor (../child-supervisor.ts), which starts it, pings it while idle, restarts it when it dies and lists it in
// /health. A picture in flight when the process dies is refused with 503 model_restarting naming the image model; the
// next request is served once the restart is ready. A client that hangs up mid-picture has its draw cancelled between
// steps (stable-diffusion.cpp checks between steps); a worker that does not stop within CANCEL_GRACE_MS is killed.
//
// Pictures cross as PNG files in a folder of the engine's own (the worker writes the out path, the engine reads and
// removes it), which keeps JSON lines small and the worker free of numpy.

import {spawn} from "node:child_process";
import {mkdtempSync, rmSync} from "node:fs";
import {readFile, rm, writeFile} from "node:fs/promises";
import {setPriority, tmpdir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import sharp from "sharp";
import type {Logger} from "../../observability/log.ts";
import {EngineCancelledError} from "../../engine/index.ts";
import {ChildSupervisor} from "../child-supervisor.ts";
import type {ChildRegistry} from "../children.ts";
import type {ImageParts} from "./model-parts.ts";

const WORKER = fileURLToPath(new URL("./image-worker.py", import.meta.url));

/** Idle checks: the worker's reader thread answers a ping at once, even during a draw. */
const HEALTH = {intervalMs: 10_000, timeoutMs: 5_000};
/** A cancelled draw stops at the next step; past this the worker is killed (a restart costs the model load). */
const CANCEL_GRACE_MS = 15_000;
/**
 * The worker's scheduling priority. The main model's decode must keep its share of the cores while a picture is
 * drawn (bench:images measures it); at nice 10 the scheduler gives the worker about a tenth of a core the main model
 * wants, and every idle cycle otherwise.
 */
const WORKER_NICE = 10;

export class ImageEngineError extends Error {
  override readonly name = "ImageEngineError";
}

export interface DrawJob {
  prompt: string;
  width: number;
  height: number;
  /** Picture i of the job is drawn at seed + i. */
  seed: number;
  count: number;
  steps: number;
  /** The reference picture of an edit or variation: a PNG of width x height. */
  init: Buffer | null;
}

type WorkerMessage =
  | {type: "ready"; info: {model: string; threads: number; load_ms: number}}
  | {type: "done"; id: number; ms: number}
  | {type: "failed"; id: number; message: string}
  | {type: "cancelled"; id: number}
  | {type: "pong"; seq: number};

interface Pending {
  resolve: (r: "done" | "cancelled") => void;
  reject: (e: Error) => void;
}

export interface ImageEngineOptions {
  /** The side model's id, as /v1/models lists it: errors and /health name it. */
  id: string;
  python: string;
  parts: ImageParts;
  threads: number;
  /** The side a reference picture is encoded at (SVC_IMAGE_REF_SIDE). */
  refSide: number;
  logger: Logger;
  children?: ChildRegistry;
  /** How long a request waits for a restarting engine (SVC_QUEUE_TIMEOUT) before its 503. */
  waitMs: number;
}

export class ImageEngine {
  private readonly supervisor: ChildSupervisor;
  private readonly pending = new Map<number, Pending>();
  private readonly dir = mkdtempSync(join(tmpdir(), "svc-images-"));
  private nextId = 1;
  /** What stable-diffusion.cpp said the model is, from the worker's ready message. */
  modelVersion: string | null = null;

  constructor(private readonly opts: ImageEngineOptions) {
    const {parts} = opts;
    this.supervisor = new ChildSupervisor({
      name: opts.id,
      label: `the image model ${opts.id}`,
      logger: opts.logger,
      spawn: () => {
        const child = spawn(opts.python, [WORKER, parts.diffusion, parts.textEncoder, parts.vae, String(opts.threads),
          String(opts.refSide)], {
          stdio: ["ignore", "ignore", "pipe", "ipc"], serialization: "json", env: {...process.env, PYTHONUNBUFFERED: "1"},
        });
        if (child.pid !== undefined) {
          try {
            setPriority(child.pid, WORKER_NICE);
          } catch {
            // Not allowed here (a container without CAP_SYS_NICE may refuse even a lower priority): it runs at ours.
          }
        }
        return child;
      },
      isReady: (m) => {
        const msg = m as WorkerMessage | undefined;
        if (msg?.type !== "ready") return false;
        this.modelVersion = msg.info.model;
        return true;
      },
      health: {...HEALTH, ping: (seq) => ({type: "ping", seq}), pong: (m) => ((m as WorkerMessage)?.type === "pong" ? (m as {seq: number}).seq : null)},
      describeExit,
      // Loading a 4B model from disk takes a while on a slow volume.
      readyTimeoutMs: 10 * 60_000,
    });
    opts.children?.add(this.supervisor);
    this.supervisor.onMessage((raw) => {
      const m = raw as WorkerMessage;
      if (m.type !== "done" && m.type !== "failed" && m.type !== "cancelled") return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.type === "failed") p?.reject(new ImageEngineError(`the image engine failed on this picture: ${m.message}`));
      else p?.resolve(m.type);
    });
    this.supervisor.onExit((exit) => {
      for (const p of this.pending.values()) p.reject(exit.error("drawing a picture"));
      this.pending.clear();
    });
  }

  /** Starts the worker and waits for the model to load; throws with the engine's last words when it cannot. */
  async start(): Promise<void> {
    try {
      await this.supervisor.start();
    } catch (err) {
      const {diffusion, textEncoder, vae} = this.opts.parts;
      throw new ImageEngineError(`${(err as Error).message} (model files ${diffusion}, ${textEncoder}, ${vae})`);
    }
  }

  /** Waits (outside the side executor, so other side models are not held) for a restarting engine; 503 past waitMs. */
  async whenReady(signal?: AbortSignal): Promise<void> {
    await this.supervisor.whenReady(this.opts.waitMs, signal);
  }

  /** The job's pictures, as PNG bytes; `signal` (the client's hang-up) cancels them (EngineCancelledError). */
  async draw(job: DrawJob, signal?: AbortSignal): Promise<Buffer[]> {
    signal?.throwIfAborted();
    const child = this.supervisor.readyChild();
    const id = this.nextId++;
    const outs = Array.from({length: job.count}, (_, i) => join(this.dir, `${id}-${i}.png`));
    const init = job.init ? join(this.dir, `${id}-in.png`) : null;
    if (init && job.init) await writeFile(init, job.init);
    const release = this.supervisor.busy();
    let killTimer: NodeJS.Timeout | null = null;
    const onAbort = () => {
      if (!this.pending.has(id)) return;
      child.send({type: "cancel", id});
      killTimer = setTimeout(() => {
        if (this.pending.has(id)) this.supervisor.kill("its client hung up and the draw did not stop");
      }, CANCEL_GRACE_MS);
    };
    signal?.addEventListener("abort", onAbort, {once: true});
    try {
      const how = await new Promise<"done" | "cancelled">((resolve, reject) => {
        this.pending.set(id, {resolve, reject});
        const {prompt, width, height, seed, steps} = job;
        child.send({type: "draw", id, prompt, width, height, seed, steps, init, out: outs}, (err) => {
          // The channel closed under the send: the exit, which follows, rejects the draw with its reason.
          if (err) this.opts.logger.warn("could not send a picture to the image engine", {error: err.message});
        });
      });
      if (how === "cancelled") throw new EngineCancelledError("the client hung up; the picture was cancelled");
      const pngs: Buffer[] = [];
      for (const out of outs) pngs.push(await this.recompress(out, job));
      return pngs;
    } catch (err) {
      // A hang-up is a cancellation (499, logged as such), whether the draw stopped or its worker had to be stopped.
      throw signal?.aborted ? new EngineCancelledError("the client hung up; the picture was cancelled") : err;
    } finally {
      if (killTimer) clearTimeout(killTimer);
      release();
      signal?.removeEventListener("abort", onAbort);
      for (const out of outs) await rm(out, {force: true});
      if (init) await rm(init, {force: true});
    }
  }

  /**
   * stable-diffusion.cpp writes its PNGs barely compressed (a 1024x1024 picture is 3 MB); zlib's default level makes
   * it about half that in some 30 ms. Reading it back also checks that it is a picture of the size asked.
   */
  private async recompress(out: string, job: DrawJob): Promise<Buffer> {
    const png = sharp(await readFile(out));
    const {width, height} = await png.metadata();
    if (width !== job.width || height !== job.height) {
      throw new ImageEngineError(`the image engine drew ${width}x${height} where ${job.width}x${job.height} was asked`);
    }
    return png.png({compressionLevel: 6}).toBuffer();
  }

  async close(): Promise<void> {
    await this.supervisor.stop();
    rmSync(this.dir, {recursive: true, force: true});
  }
}

function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: readonly string[]): string {
  const last = stderrTail.filter((l) => /^image-worker:|Error|error/.test(l)).slice(-3).join(" | ");
  return `${signal ? `killed by ${signal}` : `exit code ${code}`}${last ? ` (${last})` : ""}`;
}
