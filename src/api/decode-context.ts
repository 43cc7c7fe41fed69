// What a dialect's decoder may read besides the body: the server's limits and switches, and where to log and
// count. One type for every dialect (the Messages dialect adds its headers and log-once
// notes); the request id is here only to name the request on log lines. Nothing of it is written into the request.

import type {Eligibility} from "../syntax/index.ts";
import type {Counters} from "../observability/counters.ts";
import type {Logger} from "../observability/log.ts";
import type {ModelHandle} from "../pipeline/model-handle.ts";
import type {ServerDeps} from "./deps.ts";

export interface DecodeContext {
  requestId: string;
  maxTokensCap: number;
  /** SVC_STRICT_TOOLS */
  strictTools: boolean;
  logger: Logger;
  counters: Counters;
  /** Whether a strict tool can be enforced on the model the request is routed to, decided by that model's call syntax
   * (GenerationPipeline.strictEligibility); absent (unit tests): as JSON arguments of no particular syntax. */
  strictEligibility?: (parameters: unknown) => Eligibility;
  /** The model reads pictures (its engine has a vision tower): picture parts are read, not refused. */
  vision?: boolean;
}

/** `model`: the handle the request is routed to, whose call syntax decides which strict tools are enforced. */
export function decodeContext(deps: Pick<ServerDeps, "config" | "logger" | "counters">, requestId: string, model: ModelHandle): DecodeContext {
  return {requestId, maxTokensCap: deps.config.maxTokensCap, strictTools: deps.config.strictTools, logger: deps.logger, counters: deps.counters,
    strictEligibility: (parameters) => model.pipeline.strictEligibility(parameters), vision: model.engine.media?.vision === true};
}
