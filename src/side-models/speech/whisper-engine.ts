// The server's side of the speech engine process (whisper-child.ts): starts it, sends it one window at a
// time, and turns its death into an error that says what happened. A dead engine is restarted for the
// next request, so one bad window does not take speech down for good. A window whose client hung up is
// stopped by stopping the process: whisper.cpp cannot be interrupted mid-window, and finishing it held every
// side request behind it for seconds (a window of silence took 8-14 s on 2 cores), where a restart costs
// the model load.

import {fork, type ChildProcess} from "node:child_process";
import {fileURLToPath} from "node:url";
import type {Logger} from "../../observability/log.ts";
import type {ChildMessage, ChildSegment, TranscribeJob} from "./whisper-child.ts";

const CHILD = fileURLToPath(new URL("./whisper-child.ts", import.meta.url));
// The child is TypeScript like the rest: it loads tsx by absolute URL (not the parent's execArgv, which
// under `node --test` carries test-runner flags, nor a bare name resolved from whatever cwd the server has).
const CHILD_EXEC_ARGV = ["--import", import.meta.resolve("tsx")];

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

export class WhisperEngine {
  private child: ChildProcess | null = null;
  private ready: Promise<void> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderrTail: string[] = [];
  private closing = false;
  /** The engine was stopped on purpose, for a hang-up: its exit is not a failure to warn about. */
  private hungUp = false;

  constructor(private readonly modelPath: string, private readonly logger: Logger) {}

  /** Starts the process and waits for the model to load; throws with the engine's last words when it cannot. */
  start(): Promise<void> {
    if (this.ready) return this.ready;
    this.stderrTail = [];
    const child = fork(CHILD, [this.modelPath], {serialization: "advanced", execArgv: CHILD_EXEC_ARGV,
      stdio: ["ignore", "ignore", "pipe", "ipc"]});
    this.child = child;
    // The engine blocks in whisper.cpp for a window at a time and only sees its channel close between windows:
    // a server that exits takes it along rather than leaving it to finish a window nobody will read.
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    child.once("exit", () => process.removeListener("exit", killOnExit));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      this.stderrTail.push(...d.split("\n").filter((l) => l.trim() !== ""));
      if (this.stderrTail.length > 20) this.stderrTail.splice(0, this.stderrTail.length - 20);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (m: ChildMessage) => {
        if (m.type === "ready") {
          resolve();
        } else if (m.type === "done" || m.type === "failed") {
          const p = this.pending.get(m.id);
          this.pending.delete(m.id);
          if (m.type === "done") p?.resolve({text: m.text, segments: m.segments, language: m.language});
          else p?.reject(new SpeechEngineError(`the speech engine failed on this audio: ${m.message}`));
        }
      };
      child.on("message", onMessage);
      child.once("exit", (code, signal) => {
        const why = this.describeExit(code, signal);
        this.child = null;
        this.ready = null;
        reject(new SpeechEngineError(`the speech engine could not load ${this.modelPath}: ${why}`));
        for (const p of this.pending.values()) p.reject(new SpeechEngineError(`the speech engine stopped while transcribing: ${why}`));
        this.pending.clear();
        if (this.hungUp) this.logger.info("speech engine stopped mid-window: its client hung up; it restarts with the next request");
        else if (!this.closing) this.logger.warn("speech engine stopped; it restarts with the next request", {reason: why});
        this.hungUp = false;
      });
    });
    return this.ready;
  }

  /** One window; `signal` (the client's hang-up) stops the engine mid-window, and the promise rejects with its reason. */
  async transcribe(job: Omit<TranscribeJob, "type" | "id">, signal?: AbortSignal): Promise<WindowResult> {
    await this.start();
    const child = this.child;
    if (!child) throw new SpeechEngineError("the speech engine is not running");
    signal?.throwIfAborted();
    const id = this.nextId++;
    const onAbort = () => {
      if (!this.pending.has(id)) return;
      this.hungUp = true;
      child.kill("SIGKILL");
    };
    signal?.addEventListener("abort", onAbort, {once: true});
    try {
      return await new Promise<WindowResult>((resolve, reject) => {
        this.pending.set(id, {resolve, reject});
        child.send({type: "transcribe", id, ...job} satisfies TranscribeJob);
      });
    } catch (err) {
      throw signal?.aborted ? signal.reason ?? err : err;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    // Mid-window the engine cannot hear a disconnect until the window ends (seconds): stop it now instead.
    if (this.pending.size > 0) child.kill("SIGKILL");
    else child.disconnect();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }

  private describeExit(code: number | null, signal: NodeJS.Signals | null): string {
    const last = this.stderrTail.filter((l) => !/^whisper_|^ggml_|^load_/.test(l)).slice(-3).join(" | ");
    if (signal === "SIGILL") {
      return "it was killed by SIGILL: the prebuilt @napi-rs/whisper binary used a CPU instruction this machine lacks " +
        "(it holds AVX-512 code); name no speech model in SVC_NPU_MODELS on this machine";
    }
    return `${signal ? `killed by ${signal}` : `exit code ${code}`}${last ? ` (${last})` : ""}`;
  }
}
