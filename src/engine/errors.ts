// The engine's own failures. Engines (the main one, the side-model executor, small generation) throw these
// and know nothing of HTTP; src/api/error-body.ts maps them to statuses and headers in one place.

/** No region (or executor pass) could be had within the queue timeout; worth retrying after `retryAfterS`. */
export class EngineBusyError extends Error {
  override readonly name = "EngineBusyError";
  constructor(message: string, readonly retryAfterS: number) {
    super(message);
  }
}

/** The caller's signal aborted the work (the client left) while it waited or ran. */
export class EngineCancelledError extends Error {
  override readonly name = "EngineCancelledError";
}

/** The host has not the memory for what the request needs now (a context for it); the server keeps running. */
export class EngineMemoryError extends Error {
  override readonly name = "EngineMemoryError";
  constructor(message: string, readonly retryAfterS: number) {
    super(message);
  }
}

/** A remote engine replica stopped answering or broke its protocol in the middle of a reply; it is taken out. */
export class EngineUnavailableError extends Error {
  override readonly name = "EngineUnavailableError";
}

/**
 * A supervised child process (a side model's engine) died under the request, or is restarting and was not ready
 * in time; it is being restarted, so the same request is worth retrying after `retryAfterS`.
 */
export class EngineRestartingError extends Error {
  override readonly name = "EngineRestartingError";
  constructor(message: string, readonly retryAfterS: number) {
    super(message);
  }
}

/** Whole seconds to wait before retrying, at least 1. */
export function retryAfterSeconds(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs / 1000));
}
