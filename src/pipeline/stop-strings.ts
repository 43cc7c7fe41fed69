// Stop strings with hold-back: text that could still turn out to be the start of a stop string is held
// until it either completes one (the reply ends before it; the stop string is never shown) or can no
// longer match (it is released). A pure state machine: push(text) -> output.

export interface StopStep {
  /** Text safe to show now. */
  emit: string;
  /** The stop string that ended the reply, if one completed in this step. */
  matched: string | null;
}

export class StopMatcher {
  private held = "";
  private done = false;

  constructor(private readonly stops: readonly string[]) {}

  push(text: string): StopStep {
    if (this.done) return {emit: "", matched: null};
    if (this.stops.length === 0) return {emit: text, matched: null};
    const buf = this.held + text;
    // Earliest complete occurrence of any stop string wins; ties go to the longer string.
    let at = -1;
    let matched: string | null = null;
    for (const stop of this.stops) {
      const i = buf.indexOf(stop);
      if (i >= 0 && (at < 0 || i < at || (i === at && stop.length > matched!.length))) {
        at = i;
        matched = stop;
      }
    }
    if (matched !== null) {
      this.done = true;
      this.held = "";
      return {emit: buf.slice(0, at), matched};
    }
    const keep = this.partialSuffixLength(buf);
    this.held = buf.slice(buf.length - keep);
    return {emit: buf.slice(0, buf.length - keep), matched: null};
  }

  /** At the natural end of the reply: release whatever was held. */
  flush(): string {
    const out = this.done ? "" : this.held;
    this.held = "";
    return out;
  }

  /** Length of the longest suffix of buf that is a proper prefix of some stop string. */
  private partialSuffixLength(buf: string): number {
    let best = 0;
    for (const stop of this.stops) {
      const max = Math.min(stop.length - 1, buf.length);
      for (let n = max; n > best; n--) {
        if (buf.endsWith(stop.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
