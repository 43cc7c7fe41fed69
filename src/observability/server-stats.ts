// Per-request numbers summed since start, for /metrics. The serving code records each finished request
// (and each wait for a region); the metrics route reads the sums. Plain fields, no engine access, so a
// scrape never waits on anything.

import type {Timings} from "../core/generation.ts";
import type {EnginePhases} from "../core/engine-report.ts";

export interface FinishedRequest {
  route: string;
  status: number;
  /** null when the request ended before decoding (refused, timed out in the queue). */
  timings: Timings | null;
  /** A schema or strict tool bound the reply. */
  structured: boolean;
  /** Where its time went inside the engine, when the engine measured it. */
  phases?: EnginePhases | null;
}

export class ServerStats {
  /** svc:requests_total, by route and status. */
  readonly requests = new Map<string, {route: string; status: number; count: number}>();
  promptTokens = 0;
  promptSeconds = 0;
  predictedTokens = 0;
  predictedSeconds = 0;
  cachedPromptTokens = 0;
  draftTokens = 0;
  draftAccepted = 0;
  structuredRequests = 0;
  /** Seconds requests spent in each phase, summed (see EnginePhases); outside = between steps, outside the engine. */
  readonly phaseSeconds = {queue: 0, prepare: 0, batchWait: 0, engine: 0, outside: 0};
  /** Requests that waited a second or more for a region, and the seconds they waited. */
  queueWaited = 0;
  queueWaitSeconds = 0;
  /** Requests that left the queue without a region (client gone or SVC_QUEUE_TIMEOUT). */
  queueGaveUp = 0;
  /** Running requests (a region leased), for ref:requests_processing. */
  processing = 0;
  /** Start times (ms, performance clock) of running requests, for svc:busy_for_seconds. */
  private readonly running = new Set<number>();

  recordFinished(r: FinishedRequest): void {
    const key = `${r.route} ${r.status}`;
    const entry = this.requests.get(key) ?? {route: r.route, status: r.status, count: 0};
    entry.count++;
    this.requests.set(key, entry);
    if (r.structured) this.structuredRequests++;
    const t = r.timings;
    if (!t) return;
    this.promptTokens += t.prompt_n;
    this.promptSeconds += t.prompt_ms / 1000;
    this.predictedTokens += t.predicted_n;
    this.predictedSeconds += t.predicted_ms / 1000;
    this.cachedPromptTokens += t.cache_n;
    this.draftTokens += t.draft_n;
    this.draftAccepted += t.draft_n_accepted;
    const p = r.phases;
    if (!p) return;
    this.phaseSeconds.queue += p.queueMs / 1000;
    this.phaseSeconds.prepare += p.prepareMs / 1000;
    this.phaseSeconds.batchWait += p.batchWaitMs / 1000;
    this.phaseSeconds.engine += p.engineMs / 1000;
    this.phaseSeconds.outside += Math.max(0, t.predicted_ms - p.engineMs) / 1000;
  }

  /** A wait for a region ended: `granted` false when the request gave up. */
  recordWait(seconds: number, granted: boolean): void {
    if (!granted) this.queueGaveUp++;
    if (seconds >= 1) {
      this.queueWaited++;
      this.queueWaitSeconds += seconds;
    }
  }

  /** Marks a request running until the returned function is called (idempotent). */
  startRunning(now: number = performance.now()): () => void {
    const token = now + Math.random() * 1e-6;
    this.running.add(token);
    this.processing = this.running.size;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running.delete(token);
      this.processing = this.running.size;
    };
  }

  /** Age in seconds of the oldest running request; 0 when none runs. */
  busyForSeconds(now: number = performance.now()): number {
    let oldest = Infinity;
    for (const t of this.running) oldest = Math.min(oldest, t);
    return oldest === Infinity ? 0 : Math.max(0, (now - oldest) / 1000);
  }
}
