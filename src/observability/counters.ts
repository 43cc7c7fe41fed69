// Counters the server keeps from the start, by their metric names. /health shows them now; the metrics
// route (Prometheus) exports the same values.

export interface Counters {
  /** svc:strict_tools_unenforced_total — strict tools served without enforcement (spec "Strict tools" rule 5). */
  strictToolsUnenforced: number;
}

export function newCounters(): Counters {
  return {strictToolsUnenforced: 0};
}
