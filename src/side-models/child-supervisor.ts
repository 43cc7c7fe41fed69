// One supervisor for every child process a model runs in (speech; the main model's llama-server with SVC_MMPROJ;
// vision, embeddings and images as they land): it starts the child and waits until it is ready (its message, or a
// server child answering), watches its exit, restarts it with backoff, checks an idle child (a ping, or a server
// child's health route), stops it with the server, and reports its state for /health (`children`) and /metrics.
//
// What a request sees: a request in flight when its child dies is refused at once with 503 model_restarting and a
// Retry-After (EngineRestartingError) naming the side model, never held; the restart starts at once (the first time;
// then after 1, 2, 4 ... s, at most 30 s, until the child has stayed up for a minute). A request that arrives while
// the child is restarting waits for it to be ready, up to the caller's bound (SVC_QUEUE_TIMEOUT), then gets the same
// 503. Restarts give up (state failed, 500 naming the reason) after too many in a row or after an exit no restart can
// cure (SIGILL: the CPU lacks an instruction the binary uses); a request to a child that gave up for the first reason
// tries one fresh start. A child stopped on purpose (`kill`, a client's hang-up mid-window) restarts at once, logged
// at info: it counts as a restart, not as a crash, and does not lengthen the backoff.

import type {ChildProcess} from "node:child_process";
import type {ChildState, ChildStatus} from "../core/child-status.ts";
import {EngineRestartingError} from "../engine/index.ts";
import {ChildFailedError, DEFAULT_BACKOFF, type Backoff, type ChildExit, type HealthCheck, type SupervisorOptions} from "./child-options.ts";

export {ChildFailedError, DEFAULT_BACKOFF, type Backoff, type ChildExit, type HealthCheck, type SupervisorOptions};


interface Waiter {
  resolve(child: ChildProcess): void;
  reject(err: Error): void;
}

const STDERR_LINES = 20;

export class ChildSupervisor {
  private readonly backoff: Backoff;
  private state: ChildState = "stopped";
  private child: ChildProcess | null = null;
  private readyAt: number | null = null;
  private restarts = 0;
  private crashes = 0;
  private lastExit: string | null = null;
  private lastRestartAt: Date | null = null;
  /** Failures in a row; sets the next backoff delay. */
  private streak = 0;
  private fatalReason: string | null = null;
  private nextStartAt = 0;
  /** How long the last start took to say ready (for Retry-After). */
  private startMs = 1000;
  private busyCount = 0;
  private stopping = false;
  /** Set before a kill we ask for: why (a planned stop) or what went wrong (a failed check). */
  private planned: string | null = null;
  private unhealthy: string | null = null;
  private tail: string[] = [];
  private restartTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private pingSeq = 0;
  private outstanding: {seq: number; timer: NodeJS.Timeout} | null = null;
  private readonly waiters = new Set<Waiter>();
  private readonly messageListeners: ((m: unknown) => void)[] = [];
  private readonly exitListeners: ((e: ChildExit) => void)[] = [];

  constructor(private readonly opts: SupervisorOptions) {
    this.backoff = {...DEFAULT_BACKOFF, ...opts.backoff};
  }

  get name(): string {
    return this.opts.name;
  }

  onMessage(listener: (m: unknown) => void): void {
    this.messageListeners.push(listener);
  }

  onExit(listener: (e: ChildExit) => void): void {
    this.exitListeners.push(listener);
  }

  /** The first start: resolves when the child is ready; rejects (ChildFailedError, state failed) when it exits before. */
  start(): Promise<void> {
    this.stopping = false;
    if (!this.child && this.state !== "restarting") this.launch("starting");
    if (this.opts.health && !this.pingTimer) {
      this.pingTimer = setInterval(() => this.ping(), this.opts.health.intervalMs);
      this.pingTimer.unref();
    }
    // No bound of its own: a start that does not say ready within readyTimeoutMs is killed, and its exit rejects this.
    return this.wait(null).then(() => undefined);
  }

  /**
   * The ready child. While it restarts, waits up to `timeoutMs` for it (then EngineRestartingError); a child whose
   * restarts gave up for a curable reason gets one fresh start; a fatal or stopped one throws ChildFailedError.
   */
  async whenReady(timeoutMs: number, signal?: AbortSignal): Promise<ChildProcess> {
    signal?.throwIfAborted();
    if (this.state === "ready" && this.child) return this.child;
    if (this.state === "stopped") throw new ChildFailedError(`${this.opts.label} is stopped: the server is shutting down`);
    if (this.state === "failed") {
      if (this.fatalReason) throw this.failedError();
      this.restarts++;
      this.lastRestartAt = new Date();
      this.launch("starting");
    }
    return this.wait(timeoutMs, signal);
  }

  /** The ready child now, or the error a request should get (for work that must not wait). */
  readyChild(): ChildProcess {
    if (this.state === "ready" && this.child) return this.child;
    if (this.state === "failed" || this.state === "stopped") throw this.failedError();
    throw this.restartingError(`is restarting (${this.lastExit ?? "starting"})`);
  }

  /** Marks work running in the child until the returned release is called: no health check interrupts it. */
  busy(): () => void {
    this.busyCount++;
    this.clearPing();
    let released = false;
    return () => {
      if (!released) this.busyCount--;
      released = true;
    };
  }

  /** Stops the child on purpose (`why`: "its client hung up mid-window"); it restarts at once, logged at info. */
  kill(why: string): void {
    if (!this.child || this.planned !== null) return;
    this.planned = why;
    this.child.kill("SIGKILL");
  }

  status(): ChildStatus {
    return {name: this.opts.name, state: this.state, pid: this.child?.pid ?? null, restarts: this.restarts, crashes: this.crashes,
      last_exit: this.lastExit, last_restart_at: this.lastRestartAt?.toISOString() ?? null};
  }

  /** Stops for good: a disconnect (an idle child exits), SIGKILL at once when work is running in it or after the grace. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.state = "stopped";
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.restartTimer = this.pingTimer = null;
    this.clearPing();
    this.rejectWaiters(new ChildFailedError(`${this.opts.label} is stopped: the server is shutting down`));
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    // Work in the child (a whisper window) cannot hear a disconnect until it ends, seconds later: stop it now instead.
    if (this.busyCount > 0 || !child.connected) child.kill("SIGKILL");
    else child.disconnect();
    const timer = setTimeout(() => child.kill("SIGKILL"), this.opts.stopGraceMs ?? 5000);
    await exited;
    clearTimeout(timer);
  }

  private launch(state: "starting" | "restarting"): void {
    this.state = state;
    this.tail = [];
    this.readyAt = null;
    const started = performance.now();
    const child = this.opts.spawn();
    this.child = child;
    // A server that exits takes its children along, rather than leaving one to finish work nobody will read.
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    const readyTimeoutMs = this.opts.readyTimeoutMs ?? 120_000;
    const readyTimer = setTimeout(() => {
      this.unhealthy = `it did not say ready within ${seconds(readyTimeoutMs)}`;
      child.kill("SIGKILL");
    }, readyTimeoutMs);
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      this.tail.push(...d.split("\n").filter((l) => l.trim() !== ""));
      if (this.tail.length > STDERR_LINES) this.tail.splice(0, this.tail.length - STDERR_LINES);
    });
    const probe = this.opts.probeReady;
    if (probe) {
      const poll = async () => {
        while (child === this.child && this.readyAt === null && child.exitCode === null && child.signalCode === null && !this.stopping) {
          if (await probe.ready(AbortSignal.timeout(Math.max(1000, probe.pollMs * 10))).catch(() => false)) {
            if (child !== this.child || child.exitCode !== null || child.signalCode !== null) return;
            clearTimeout(readyTimer);
            return this.ready(child, performance.now() - started);
          }
          await new Promise((r) => setTimeout(r, probe.pollMs));
        }
      };
      void poll();
    }
    child.on("message", (m: unknown) => {
      if (child !== this.child) return;
      if (this.readyAt === null && this.opts.isReady?.(m)) {
        clearTimeout(readyTimer);
        this.ready(child, performance.now() - started);
        return;
      }
      const health = this.opts.health;
      const seq = health && "pong" in health ? health.pong(m) : null;
      if (seq !== null) {
        if (this.outstanding?.seq === seq) this.clearPing();
        return;
      }
      for (const l of this.messageListeners) l(m);
    });
    let gone = false;
    const exited = (code: number | null, signal: NodeJS.Signals | null, error?: string) => {
      if (gone) return;
      gone = true;
      clearTimeout(readyTimer);
      process.removeListener("exit", killOnExit);
      this.exited(child, code, signal, error);
    };
    child.once("exit", (code, signal) => exited(code, signal));
    // A process that could not be spawned at all emits only "error".
    child.once("error", (err) => {
      if (child.pid === undefined) exited(null, null, err.message);
    });
  }

  private ready(child: ChildProcess, ms: number): void {
    // Stopped while it loaded: it is on its way out, not ready.
    if (this.stopping) return;
    this.state = "ready";
    this.readyAt = Date.now();
    this.startMs = ms;
    this.opts.logger.info("child ready", {child: this.opts.name, pid: child.pid, ms: Math.round(ms)});
    for (const w of [...this.waiters]) w.resolve(child);
    this.waiters.clear();
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, spawnError?: string): void {
    if (child !== this.child) return;
    this.child = null;
    this.clearPing();
    const upFor = this.readyAt === null ? null : Date.now() - this.readyAt;
    this.readyAt = null;
    const planned = this.planned;
    const unhealthy = this.unhealthy;
    this.planned = this.unhealthy = null;
    const how = spawnError ?? this.describe(code, signal);
    const reason = planned ? `stopped on purpose (${planned}): ${how}` : unhealthy ? `${unhealthy}; ${how}` : how;
    this.lastExit = reason;
    if (this.stopping) return this.tell({reason, planned: true, next: "stopped"});
    if (planned) {
      this.opts.logger.info("child stopped on purpose; restarting", {child: this.opts.name, why: planned});
      return this.scheduleRestart(0, reason, true);
    }
    this.crashes++;
    if (upFor !== null && upFor >= this.backoff.resetAfterMs) this.streak = 0;
    this.streak++;
    const fatal = this.opts.fatal?.(code, signal) ?? false;
    // A first start that fails is the start's failure (the server does not come up), not something to retry.
    const starting = this.state === "starting";
    if (fatal || starting || this.streak > (this.opts.maxFailures ?? 8)) {
      this.state = "failed";
      this.fatalReason = fatal ? reason : null;
      this.opts.logger.error("child failed; not restarting", {child: this.opts.name, reason, failures_in_a_row: this.streak});
      this.rejectWaiters(starting ? new ChildFailedError(`${this.opts.label} could not start: ${reason}`) : this.failedError());
      return this.tell({reason, planned: false, next: "failed"});
    }
    const delay = this.streak === 1 ? this.backoff.firstMs : Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** (this.streak - 2));
    this.opts.logger.warn("child died; restarting", {child: this.opts.name, reason, in_ms: delay, failures_in_a_row: this.streak});
    this.scheduleRestart(delay, reason, false);
  }

  private scheduleRestart(delayMs: number, reason: string, planned: boolean): void {
    this.state = "restarting";
    this.nextStartAt = Date.now() + delayMs;
    this.tell({reason, planned, next: "restart"});
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.state !== "restarting") return;
      this.restarts++;
      this.lastRestartAt = new Date();
      this.launch("restarting");
    }, delayMs);
  }

  private tell(e: Omit<ChildExit, "error">): void {
    const exit: ChildExit = {...e, error: (doing) => {
      if (e.next === "restart") return this.restartingError(`stopped while ${doing} (${e.reason}); it is being restarted`);
      if (e.next === "stopped") return new ChildFailedError(`${this.opts.label} was stopped while ${doing}: the server is shutting down`);
      return new ChildFailedError(`${this.opts.label} stopped while ${doing} and is not restarted: ${e.reason}`);
    }};
    for (const l of this.exitListeners) l(exit);
  }

  private wait(timeoutMs: number | null, signal?: AbortSignal): Promise<ChildProcess> {
    return new Promise<ChildProcess>((resolve, reject) => {
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.waiters.delete(w);
      };
      const w: Waiter = {resolve: (c) => (done(), resolve(c)), reject: (e) => (done(), reject(e))};
      const timer = timeoutMs === null ? null : setTimeout(() => w.reject(this.state === "starting"
        ? this.restartingError(`is starting (${this.lastExit ?? "loading"}) and was not ready within ${seconds(timeoutMs)}`)
        : this.restartingError(`is restarting (${this.lastExit ?? "starting"}) and was not ready within ${seconds(timeoutMs)}`)),
      timeoutMs);
      const onAbort = () => w.reject(signal!.reason as Error);
      signal?.addEventListener("abort", onAbort, {once: true});
      this.waiters.add(w);
    });
  }

  private rejectWaiters(err: Error): void {
    for (const w of [...this.waiters]) w.reject(err);
    this.waiters.clear();
  }

  private restartingError(what: string): EngineRestartingError {
    const left = Math.max(0, this.nextStartAt - Date.now()) + (this.state === "ready" ? 0 : this.startMs);
    const retryAfterS = Math.max(1, Math.ceil(left / 1000));
    return new EngineRestartingError(`${this.opts.label} ${what}; retry in ${retryAfterS} s`, retryAfterS);
  }

  private failedError(): ChildFailedError {
    if (this.state === "stopped") return new ChildFailedError(`${this.opts.label} is stopped: the server is shutting down`);
    return new ChildFailedError(`${this.opts.label} is not running and is not restarted: ${this.lastExit ?? "it never started"}`);
  }

  private ping(): void {
    const health = this.opts.health;
    const child = this.child;
    if (!health || !child || this.state !== "ready" || this.busyCount > 0 || this.outstanding) return;
    if ("check" in health) return this.check(health, child);
    if (!child.connected) return;
    const seq = ++this.pingSeq;
    const timer = setTimeout(() => {
      if (this.outstanding?.seq !== seq || child !== this.child) return;
      this.outstanding = null;
      this.unhealthy = `it did not answer a health check within ${health.timeoutMs} ms`;
      this.opts.logger.warn("child did not answer a health check; killing it", {child: this.opts.name, pid: child.pid});
      child.kill("SIGKILL");
    }, health.timeoutMs);
    this.outstanding = {seq, timer};
    child.send(health.ping(seq) as Parameters<ChildProcess["send"]>[0], (err) => {
      // The channel closed under the ping: the exit handler says why.
      if (err) this.clearPing();
    });
  }

  /** A server child's health check: an answer of false, or none within the timeout, kills it (and it restarts). */
  private check(health: Extract<HealthCheck, {check: unknown}>, child: ChildProcess): void {
    const seq = ++this.pingSeq;
    const controller = new AbortController();
    const fail = (why: string) => {
      if (this.outstanding?.seq !== seq || child !== this.child) return;
      this.outstanding = null;
      this.unhealthy = why;
      this.opts.logger.warn("child failed a health check; killing it", {child: this.opts.name, pid: child.pid, why});
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => {
      controller.abort();
      fail(`it did not answer a health check within ${health.timeoutMs} ms`);
    }, health.timeoutMs);
    this.outstanding = {seq, timer};
    void health.check(controller.signal).catch(() => false).then((ok) => {
      if (ok) {
        if (this.outstanding?.seq === seq) this.clearPing();
      } else if (!controller.signal.aborted) {
        clearTimeout(timer);
        fail("its health check failed");
      }
    });
  }

  private clearPing(): void {
    if (this.outstanding) clearTimeout(this.outstanding.timer);
    this.outstanding = null;
  }

  private describe(code: number | null, signal: NodeJS.Signals | null): string {
    if (this.opts.describeExit) return this.opts.describeExit(code, signal, this.tail);
    const last = this.tail.slice(-3).join(" | ");
    return `${signal ? `killed by ${signal}` : `exit code ${code}`}${last ? ` (${last})` : ""}`;
  }
}

const seconds = (ms: number) => `${ms < 10_000 ? Math.round(ms / 100) / 10 : Math.round(ms / 1000)} s`;
