// Counters the server keeps from the start, by their metric names. /health shows them now; the metrics
// route (Prometheus) exports the same values.

export interface Counters {
  /** svc:strict_tools_unenforced_total — strict tools served without enforcement (spec "Strict tools" rule 5). */
  strictToolsUnenforced: number;
  /** svc:transcriptions_total — recordings transcribed. */
  transcriptions: number;
  /** svc:transcribed_audio_seconds_total — their audio, in seconds. */
  transcribedAudioSeconds: number;
  /** svc:images_total — pictures drawn by the image model. */
  images: number;
}

export function newCounters(): Counters {
  return {strictToolsUnenforced: 0, transcriptions: 0, transcribedAudioSeconds: 0, images: 0};
}
