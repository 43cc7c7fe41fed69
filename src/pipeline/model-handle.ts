// One generation model as the routes see it. Lives below the API so that side models that generate (small
// generation) can build one without reaching up into the routes.

import type {ChildStatus} from "../core/child-status.ts";
import type {Engine} from "../engine/index.ts";
import type {Logger} from "../observability/log.ts";
import type {HandleRegistry} from "../sessions/handles.ts";
import {SessionService} from "../sessions/session-service.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import {GenerationPipeline, type PipelineOptions} from "./generate.ts";

export interface ModelIdentity {
  id: string;
  path: string;
  sha256: string | null;
  source: string;
}

/**
 * One generation model as the routes see it: what serves it (engine and pipeline over its template) and what
 * replies name. The main model's handle is built by load-models.ts from the real engine; tests build handles
 * over an engine double; small generation has one of its own.
 */
export interface ModelHandle {
  identity: ModelIdentity;
  engine: Engine;
  pipeline: GenerationPipeline;
  template: ChatTemplate | null;
  /** Named sessions on this model (SVC_FORK=1); null when off. */
  sessions: HandleRegistry | null;
  /** Finishes what replies already sent still owe (seals, keeps), then frees the model. */
  close(): Promise<void>;
  /** The child processes the model runs in (its llama-server with SVC_MMPROJ), for /health and /metrics; absent: none. */
  children?(): ChildStatus[];
}


/**
 * The handle of a generation model with named sessions (or none): the pipeline over its engine and template,
 * and a close that lets the engine finish first (the seals and keeps of replies already sent: a client was
 * told "accepted"; held conversations written to disk), then closes the handle index.
 */
/** How long shutdown waits for the keeps of replies already answered (main.ts's forced exit comes after it). */
export const KEEPS_AT_SHUTDOWN_MS = 20_000;

export function buildModelHandle(opts: {identity: ModelIdentity; engine: Engine; template: ChatTemplate | null; sessions: HandleRegistry | null;
  pipeline: PipelineOptions; logger: Logger}): ModelHandle {
  const {identity, engine, template, sessions, logger} = opts;
  const pipeline = new GenerationPipeline(engine, template, opts.pipeline, logger, sessions ? new SessionService(sessions, logger) : null);
  return {
    identity,
    engine,
    pipeline,
    template,
    sessions,
    close: async () => {
      // A reply answered "X-Svc-Keep: accepted" is kept after the client has it: the keep (a seal and a state file)
      // must finish before the engine goes away, or a restart would not find the handle.
      await sessions?.keepsSettled(KEEPS_AT_SHUTDOWN_MS);
      await engine.close();
      await sessions?.close();
    },
  };
}
