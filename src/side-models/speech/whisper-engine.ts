// The server's side of the speech engine process (whisper-child.ts): sends it one window at a time through the child
// supervisor (../child-supervisor.ts), which starts it, checks it while idle, restarts it when it dies and lists it in
// /health. A window in flight when the process dies is refused with 503 model_restarting naming the speech model; the
// next request is served once the restart is ready. A window whose client hung up is stopped by stopping the process:
// whisper.cpp cannot be interrupted mid-window, and finishing it held every side request behind it for seconds (a
// window of silence took 8-14 s on 2 cores), where a restart costs the model load.

import {fork} from "node:child_process";
import type {Logger} from "../../observability/log.ts";
import {ChildSupervisor} from "../child-supervisor.ts";
import {childScript, type ChildRegistry} from "../children.ts";
import type {ChildMessage, ChildSegment, TranscribeJob} from "./whisper-child.ts";

const CHILD = childScript(import.meta.url, "whisper-child");

/** Idle checks: whisper.cpp answers a ping at once between windows; it is never pinged during one (full() blocks). */
const HEALTH = {intervalMs: 10_000, timeoutMs: 5_000};

export class SpeechEngineError extends Error {
  override readonly name = "SpeechEngineError";
}

export interface WindowResult {
  text: string;
  segments: ChildSegment[];
  language: string | null;
}

interface Pending {
  resolve: (r: WindowResult) => void;
  reject: (e: Error) => void;
}

export interface WhisperEngineOptions {
  /** The side model's id, as /v1/models lists it: errors and /health name it. */
  id: string;
  modelPath: string;
  logger: Logger;
  /** Where /health finds the child. */
  children?: ChildRegistry;
  /** How long a request waits for a restarting engine (SVC_QUEUE_TIMEOUT) before its 503. */
  waitMs: number;
}

export class WhisperEngine {
  private readonly supervisor: ChildSupervisor;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(private readonly opts: WhisperEngineOptions) {
    this.supervisor = new ChildSupervisor({
      name: opts.id,
      label: `the speech model ${opts.id}`,
      logger: opts.logger,
      spawn: () => fork(CHILD.path, [opts.modelPath], {serialization: "advanced", execArgv: CHILD.execArgv,
        stdio: ["ignore", "ignore", "pipe", "ipc"]}),
      isReady: (m) => (m as ChildMessage | undefined)?.type === "ready",
      health: {...HEALTH, ping: (seq) => ({type: "ping", seq}), pong: pongSeq},
      describeExit,
      fatal: (_code, signal) => signal === "SIGILL",
    });
    opts.children?.add(this.supervisor);
    this.supervisor.onMessage((raw) => {
      const m = raw as ChildMessage;
      if (m.type !== "done" && m.type !== "failed") return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.type === "done") p?.resolve({text: m.text, segments: m.segments, language: m.language});
      else p?.reject(new SpeechEngineError(`the speech engine failed on this audio: ${m.message}`));
    });
    this.supervisor.onExit((exit) => {
      for (const p of this.pending.values()) p.reject(exit.error("transcribing"));
      this.pending.clear();
    });
  }

  /** Starts the process and waits for the model to load; throws with the engine's last words and the file when it cannot. */
  async start(): Promise<void> {
    try {
      await this.supervisor.start();
    } catch (err) {
      throw new SpeechEngineError(`${(err as Error).message} (model file ${this.opts.modelPath})`);
    }
  }

  /** Waits (outside the side executor, so other side models are not held) for a restarting engine; 503 past `waitMs`. */
  async whenReady(signal?: AbortSignal): Promise<void> {
    await this.supervisor.whenReady(this.opts.waitMs, signal);
  }

  /** One window; `signal` (the client's hang-up) stops the engine mid-window, and the promise rejects with its reason. */
  async transcribe(job: Omit<TranscribeJob, "type" | "id">, signal?: AbortSignal): Promise<WindowResult> {
    signal?.throwIfAborted();
    // Ready a moment ago (whenReady); one that died since is refused at once rather than waited for inside the executor.
    const child = this.supervisor.readyChild();
    const id = this.nextId++;
    const release = this.supervisor.busy();
    const onAbort = () => {
      if (this.pending.has(id)) this.supervisor.kill("its client hung up mid-window");
    };
    signal?.addEventListener("abort", onAbort, {once: true});
    try {
      return await new Promise<WindowResult>((resolve, reject) => {
        this.pending.set(id, {resolve, reject});
        child.send({type: "transcribe", id, ...job} satisfies TranscribeJob, (err) => {
          // The channel closed under the send: the exit, which follows, rejects the window with its reason.
          if (err) this.opts.logger.warn("could not send a window to the speech engine", {error: err.message});
        });
      });
    } catch (err) {
      throw signal?.aborted ? signal.reason ?? err : err;
    } finally {
      release();
      signal?.removeEventListener("abort", onAbort);
    }
  }

  async close(): Promise<void> {
    await this.supervisor.stop();
  }
}

function pongSeq(raw: unknown): number | null {
  const m = raw as ChildMessage | undefined;
  return m?.type === "pong" ? m.seq : null;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: readonly string[]): string {
  const last = stderrTail.filter((l) => !/^whisper_|^ggml_|^load_/.test(l)).slice(-3).join(" | ");
  if (signal === "SIGILL") {
    return "it was killed by SIGILL: the prebuilt @napi-rs/whisper binary used a CPU instruction this machine lacks " +
      "(it holds AVX-512 code); name no speech model in SVC_NPU_MODELS on this machine";
  }
  return `${signal ? `killed by ${signal}` : `exit code ${code}`}${last ? ` (${last})` : ""}`;
}
