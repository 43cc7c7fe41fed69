// What route handlers may use. Built once in app.ts (the composition root) and handed to every route module.

import type {Config} from "../config/config.ts";
import type {Engine} from "../engine/engine.ts";
import type {SchemaCache} from "../grammar/index.ts";
import type {Logger} from "../observability/log.ts";
import type {Counters} from "../observability/counters.ts";
import type {ServerStats} from "../observability/server-stats.ts";
import type {GenerationPipeline} from "../pipeline/generate.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import type {CodingAgentMap} from "../sessions/coding-agent.ts";
import type {SideModels} from "../side-models/side-models.ts";

export interface ModelIdentity {
  id: string;
  path: string;
  sha256: string | null;
  source: string;
}

export interface ServerDeps {
  config: Config;
  engine: Engine;
  pipeline: GenerationPipeline;
  /** Compiled JSON schemas, shared by every route that takes one. */
  schemas: SchemaCache;
  counters: Counters;
  /** Per-request sums for /metrics. */
  stats: ServerStats;
  template: ChatTemplate | null;
  model: ModelIdentity;
  logger: Logger;
  /** SVC_FORK_MAP=coding-agent (with SVC_FORK=1): server-named sessions per coding-agent thread; else null. */
  agentMap: CodingAgentMap | null;
  /** The side models of SVC_NPU_MODELS; null when it is unset (the server behaves as if they did not exist). */
  side: SideModels | null;
  version: string;
  startedAt: Date;
}
