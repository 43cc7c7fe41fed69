// The per-request log line: one line when a generation request ends, with what an operator needs to see
// at a glance: status, the cached share of the prompt, how many prompt tokens were new (and the prefill
// rate once enough were processed to mean something), decode speed, prompt-lookup drafts when there were
// any, region and pool occupancy.

import type {Timings} from "../core/generation.ts";
import type {EnginePhases} from "../core/engine-report.ts";
import type {Logger} from "./log.ts";

/** Below this many processed prompt tokens the prefill rate is noise; only the count is printed. */
export const PREFILL_RATE_FLOOR = 2048;

export interface RequestRecord {
  requestId: string;
  route: string;
  status: number;
  stream: boolean;
  promptTokens: number;
  timings: Timings | null;
  finish: string;
  regionId: number | null;
  /** Where the reused prompt came from and, when less was reused than could have been, why (e.g. "memory:812,diverged@812"). */
  cache?: string | null;
  busyRegions: number;
  totalRegions: number;
  totalMs: number;
  /** Where the time went inside the engine, when it measured it. */
  phases?: EnginePhases | null;
  /** Tool calls the model wrote whose syntax did not close (shown as text when not streamed). */
  malformedCalls?: number;
  /** SVC_MAX_TOOL_CALLS, when it ended the reply (a model that kept calling). */
  toolCallCap?: number;
  /** The model tried to stop before its required answer started, and the answer was opened instead. */
  stopOverruled?: boolean;
  error?: string;
}

export function requestLogFields(r: RequestRecord): Record<string, unknown> {
  const f: Record<string, unknown> = {id: r.requestId, route: r.route, status: r.status, stream: r.stream, finish: r.finish};
  if (r.timings) {
    const t = r.timings;
    const share = r.promptTokens > 0 ? Math.round((100 * t.cache_n) / r.promptTokens) : 0;
    f.prompt = r.promptTokens;
    f.cached = `${share}%`;
    f.new = t.prompt_n;
    if (t.prompt_n >= PREFILL_RATE_FLOOR) f.prefill_tps = Math.round(t.prompt_per_second);
    f.gen = t.predicted_n;
    if (t.predicted_n > 1) f.decode_tps = Math.round(t.predicted_per_second * 10) / 10;
    // Only when speculation ran: accepted/proposed draft tokens.
    if (t.draft_n > 0) f.draft = `${t.draft_n_accepted}/${t.draft_n}`;
    f.ttft_ms = Math.round(t.prompt_ms);
    if (t.route) {
      f.replica = t.route.replica;
      f.expected_cached = t.route.expected_cached;
      f.route_reason = t.route.reason;
    }
  }
  if (r.phases) {
    // The time breakdown: queue, region preparation, prompt, decode steps in the engine (of which waiting
    // for their batch), and between steps outside the engine (pipeline, SSE writes).
    const p = r.phases;
    f.queue_ms = Math.round(p.queueMs);
    f.prep_ms = Math.round(p.prepareMs);
    if (r.timings) {
      f.prefill_ms = Math.round(r.timings.prompt_ms);
      f.step_ms = Math.round(p.engineMs);
      f.batch_wait_ms = Math.round(p.batchWaitMs);
      f.outside_ms = Math.round(Math.max(0, r.timings.predicted_ms - p.engineMs));
    }
  }
  if (r.malformedCalls) f.malformed_calls = r.malformedCalls;
  if (r.toolCallCap) f.tool_call_cap = r.toolCallCap;
  if (r.stopOverruled) f.stop_overruled = 1;
  if (r.cache) f.cache = r.cache;
  if (r.regionId !== null) f.region = r.regionId;
  f.pool = `${r.busyRegions}/${r.totalRegions}`;
  f.ms = Math.round(r.totalMs);
  if (r.error) f.error = r.error;
  return f;
}

export function logRequest(logger: Logger, r: RequestRecord): void {
  const fields = requestLogFields(r);
  if (r.status >= 500) logger.error("request", fields);
  else logger.info("request", fields);
}
