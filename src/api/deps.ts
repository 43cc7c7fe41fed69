// What route handlers may use. Built once in app.ts (the composition root) and handed to every route module.

import type {Config} from "../config/config.ts";
import type {Logger} from "../observability/log.ts";
import type {Counters} from "../observability/counters.ts";
import type {ServerStats} from "../observability/server-stats.ts";
import type {CodingAgentMap} from "../sessions/coding-agent.ts";
import type {SideModels} from "../side-models/side-models.ts";
import type {ModelHandle} from "../pipeline/model-handle.ts";
import type {ChatWatchers, ModelRouter} from "./model-router.ts";

export type {ModelHandle, ModelIdentity} from "../pipeline/model-handle.ts";

export interface ServerDeps {
  config: Config;
  /** The model every generation route serves (side models are in `side`). */
  main: ModelHandle;
  counters: Counters;
  /** Per-request sums for /metrics. */
  stats: ServerStats;
  logger: Logger;
  /** SVC_FORK_MAP=coding-agent (with SVC_FORK=1): server-named sessions per coding-agent thread; else null. */
  agentMap: CodingAgentMap | null;
  /** The side models of SVC_NPU_MODELS; null when it is unset (the server behaves as if they did not exist). */
  side: SideModels | null;
  /** What serves a generation request's `model` (api/routing/ builds it from `main` and `side`). */
  models: ModelRouter;
  /** What may watch a chat reply (the streaming guard). */
  watchers: ChatWatchers;
  version: string;
  startedAt: Date;
  /**
   * Fires when shutdown's grace (SVC_SHUTDOWN_GRACE_S) is over: generations still running are cancelled and answered
   * 503 `server_shutting_down` (a stream gets it as its final error event).
   */
  shutdown: AbortSignal;
}
