// What a supervised child process reports (src/side-models/child-supervisor.ts): /health lists one entry per
// child under `children`, and /metrics counts its restarts. It lives in core so that observability reads it
// without importing the side models.

/**
 * starting: its first start (or a start asked for after it failed) is loading; ready: it answers; restarting: it
 * exited and a new process is waiting out its backoff or loading; stopped: the server stopped it (shutdown);
 * failed: restarts gave up (too many in a row, or an exit a restart cannot cure, such as SIGILL).
 */
export type ChildState = "starting" | "ready" | "restarting" | "stopped" | "failed";

export interface ChildStatus {
  /** What the child serves: a side model's id (as /v1/models lists it). */
  name: string;
  state: ChildState;
  /** The running process's id; null between processes. */
  pid: number | null;
  /** Processes started after the first, for any reason. */
  restarts: number;
  /** Exits nobody asked for (a crash, a kill from outside, a failed health check); a hang-up's stop is not one. */
  crashes: number;
  /** Why the last process exited, in words; null before any exit. */
  last_exit: string | null;
  /** When the last restart began (ISO 8601); null before any. */
  last_restart_at: string | null;
}
