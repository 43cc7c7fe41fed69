// What a child supervisor (child-supervisor.ts) is told about its child, and what it tells back: how to start and
// check it, the backoff between restarts, what an exit means for the work that was in it.

import type {ChildProcess} from "node:child_process";
import type {Logger} from "../observability/log.ts";

/**
 * A forked child answers `ping(seq)` with a message `pong` reads as `seq`; a server child (no IPC channel) is asked
 * with `check`, which resolves true while it is healthy. Asked only while no work is running in it.
 */
export type HealthCheck = ({
  ping(seq: number): unknown;
  /** The seq a pong answers, or null when the message is not a pong. */
  pong(message: unknown): number | null;
} | {check(signal: AbortSignal): Promise<boolean>}) & {
  intervalMs: number;
  timeoutMs: number;
};

export interface Backoff {
  /** Delay before the first restart of a run of failures. */
  firstMs: number;
  /** Delay before the second; doubled for each one after. */
  baseMs: number;
  maxMs: number;
  /** A child up this long has its run of failures forgotten. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: Backoff = {firstMs: 0, baseMs: 1000, maxMs: 30_000, resetAfterMs: 60_000};

export interface SupervisorOptions {
  /** The side model's id: /health's `name`, the metric label, the log field. */
  name: string;
  /** How errors name it: "the speech model nx3-asr-0.6b". */
  label: string;
  /** Starts one process (fork with an IPC channel; stderr piped is kept for the exit's description). */
  spawn(): ChildProcess;
  /** A forked child is ready when it sends a message this accepts. */
  isReady?(message: unknown): boolean;
  /** A server child (no IPC channel) is ready once this resolves true; asked every `pollMs` after the spawn. */
  probeReady?: {ready(signal: AbortSignal): Promise<boolean>; pollMs: number};
  logger: Logger;
  health?: HealthCheck;
  backoff?: Partial<Backoff>;
  /** A start that has not said ready by then is killed (and counted as a failure). */
  readyTimeoutMs?: number;
  /** After a disconnect, how long the child has to exit before SIGKILL. */
  stopGraceMs?: number;
  /**
   * Restarts in a row (none of them followed by backoff.resetAfterMs of health) before the next failure gives up; the
   * default 8 waits 0, 1, 2, 4, 8, 16, 30 and 30 s: about a minute and a half of a child that keeps dying.
   */
  maxFailures?: number;
  /** The exit in words, from its code or signal and the child's last stderr lines. */
  describeExit?(code: number | null, signal: NodeJS.Signals | null, stderrTail: readonly string[]): string;
  /** An exit no restart can cure: the child is failed at once. */
  fatal?(code: number | null, signal: NodeJS.Signals | null): boolean;
}

/** What exit listeners are told: the reason, and the error a request that was in the child should get. */
export interface ChildExit {
  reason: string;
  /** The child was stopped on purpose (`kill`) or with the server (`stop`). */
  planned: boolean;
  next: "restart" | "failed" | "stopped";
  /** The error for work in flight: `doing` says what it was ("transcribing"). */
  error(doing: string): Error;
}

/** The child cannot serve and is not being restarted (restarts gave up, or the server is stopping it): a 500 naming why. */
export class ChildFailedError extends Error {
  override readonly name = "ChildFailedError";
}
