// The decode thread count, kept right while serving. At start the engine times a step on one thread and on all
// (decode-threads.ts, measureDecodeThreads) and picks the faster; a choice made while another process took a core,
// or one that stops being right when a neighbour arrives or leaves, would otherwise stay for the server's life
// (one start on a busy machine chose one thread with steps at 24 against 62 ms, and kept it on a quiet one).
// So batched steps keep being timed, and now and then a few run on the other count: the faster one, by the
// median of recent dispatches of the same size, is kept. Only batched steps below SPLIT_ROW_FROM are tuned: their
// rows take the one-pass attention loop, whose numbers do not depend on the thread count; a row that goes alone
// there always runs on every thread (decode-threads.ts).

/** Dispatches on the current count between two trials of the other one. */
export const TRIAL_EVERY = 96;
/** Dispatches one trial runs on the other count. */
export const TRIAL_LENGTH = 8;
/** Recent samples kept per thread count and batch size. */
const WINDOW = 24;
/** The other count must be at least this much faster to be taken (noise on a shared machine is not a reason). */
const MARGIN = 0.9;
/** A longer interval was not one dispatch (the engine idled or waited in between): not a sample. */
const MAX_SAMPLE_MS = 2000;

export interface TunerSwitch {
  from: number;
  to: number;
  /** Median ms of a dispatch of `rows` steps on each count, when the switch was decided. */
  ms: Record<number, number>;
  rows: number;
}

export class DecodeThreadTuner {
  private current: number;
  private sinceTrial = 0;
  private trialLeft = 0;
  /** `${threads}:${rows}` → recent dispatch times (ms). */
  private readonly samples = new Map<string, number[]>();

  constructor(private readonly candidates: readonly [number, number], initial: number,
    private readonly onSwitch: (s: TunerSwitch) => void = () => {}) {
    this.current = initial;
  }

  /** The count chosen now (onSwitch keeps the engine's info, which /health reports, in step). */
  get chosen(): number {
    return this.current;
  }

  /** Threads for the next batch of steps: the chosen count, or the other one during a trial. */
  next(): number {
    if (this.candidates[0] === this.candidates[1]) return this.current;
    if (this.trialLeft > 0) {
      this.trialLeft--;
      return this.other();
    }
    if (++this.sinceTrial >= TRIAL_EVERY) {
      // Each trial is judged on its own samples: an earlier one ran under other conditions.
      for (const key of [...this.samples.keys()]) if (key.startsWith(`${this.other()}:`)) this.samples.delete(key);
      this.sinceTrial = 0;
      this.trialLeft = TRIAL_LENGTH;
    }
    return this.current;
  }

  /** One dispatch of `rows` steps on `threads` took `ms` (decode and sampling); decides after each trial sample. */
  observe(threads: number, rows: number, ms: number): void {
    if (!(ms > 0) || ms > MAX_SAMPLE_MS) return;
    const key = `${threads}:${rows}`;
    const list = this.samples.get(key) ?? [];
    list.push(ms);
    if (list.length > WINDOW) list.shift();
    this.samples.set(key, list);
    if (threads !== this.current) this.decide(rows);
  }

  private other(): number {
    return this.current === this.candidates[0] ? this.candidates[1] : this.candidates[0];
  }

  private decide(rows: number): void {
    const mine = this.samples.get(`${this.current}:${rows}`) ?? [];
    const theirs = this.samples.get(`${this.other()}:${rows}`) ?? [];
    if (mine.length < 4 || theirs.length < 4) return;
    const a = median(mine);
    const b = median(theirs);
    if (b < a * MARGIN) {
      const from = this.current;
      this.current = this.other();
      this.trialLeft = 0;
      this.onSwitch({from, to: this.current, ms: {[from]: a, [this.current]: b}, rows});
    }
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
}
