// The decode thread count kept right while serving (src/engine/llama/decode-thread-tuner.ts), driven as the engine
// drives it: next() before each batch of steps, observe() with that dispatch's time once it is done.

import assert from "node:assert/strict";
import {test} from "node:test";
import {DecodeThreadTuner, TRIAL_EVERY, TRIAL_LENGTH, type TunerSwitch} from "../../../../src/engine/llama/decode-thread-tuner.ts";

/** Runs `n` dispatches of `rows` steps, each taking msOn(threads). Returns the thread counts used. */
function serve(t: DecodeThreadTuner, n: number, rows: number, msOn: (threads: number) => number): number[] {
  const used: number[] = [];
  for (let i = 0; i < n; i++) {
    const threads = t.next();
    used.push(threads);
    t.observe(threads, rows, msOn(threads));
  }
  return used;
}

test("a choice made while the machine was busy is replaced once the other count proves faster", () => {
  const switches: TunerSwitch[] = [];
  const t = new DecodeThreadTuner([1, 2], 1, (s) => switches.push(s));
  const used = serve(t, TRIAL_EVERY + TRIAL_LENGTH, 4, (n) => (n === 2 ? 6 : 10));
  assert.equal(used.filter((n) => n === 2).length > 0, true, "a trial ran on two threads");
  assert.equal(t.chosen, 2);
  assert.deepEqual(switches.map((s) => [s.from, s.to, s.rows]), [[1, 2, 4]]);
  assert.equal(switches[0]!.ms[1], 10);
  assert.equal(switches[0]!.ms[2], 6);
});

test("it stays when the other count is slower, or faster by less than the margin, and trials stay short", () => {
  for (const other of [14, 9.5]) {
    const t = new DecodeThreadTuner([1, 2], 2);
    const used = serve(t, 3 * (TRIAL_EVERY + TRIAL_LENGTH), 3, (n) => (n === 1 ? other : 10));
    assert.equal(t.chosen, 2, `other count at ${other} ms against 10`);
    assert.equal(used.filter((n) => n === 1).length, 3 * TRIAL_LENGTH, "only the trials ran on the other count");
  }
});

test("when conditions change back, a later trial switches back: each trial is judged on its own samples", () => {
  const t = new DecodeThreadTuner([1, 2], 2);
  let busy = true;
  const ms = (n: number) => (busy ? (n === 2 ? 30 : 12) : (n === 2 ? 6 : 10));
  serve(t, TRIAL_EVERY + TRIAL_LENGTH, 2, ms);
  assert.equal(t.chosen, 1, "busy: one thread");
  busy = false;
  serve(t, 2 * (TRIAL_EVERY + TRIAL_LENGTH), 2, ms);
  assert.equal(t.chosen, 2, "quiet again: two threads");
});

test("dispatches of another size are not compared, and an interval that was not one dispatch is not a sample", () => {
  const t = new DecodeThreadTuner([1, 2], 1);
  for (let k = 0; k < 2 * (TRIAL_EVERY + TRIAL_LENGTH); k++) {
    const threads = t.next();
    // The current count only ever runs 1-row batches, trials only 4-row ones: nothing to compare.
    t.observe(threads, threads === 1 ? 1 : 4, threads === 1 ? 10 : 2);
  }
  assert.equal(t.chosen, 1);
  const u = new DecodeThreadTuner([1, 2], 1);
  serve(u, TRIAL_EVERY + TRIAL_LENGTH, 4, (n) => (n === 2 ? 5000 : 10));
  assert.equal(u.chosen, 1, "idle gaps (5 s) are ignored, not taken as slow dispatches");
});

test("one candidate (a fixed count, or one thread in all): always that count", () => {
  const t = new DecodeThreadTuner([2, 2], 2);
  assert.deepEqual(new Set(serve(t, 3 * TRIAL_EVERY, 4, () => 10)), new Set([2]));
});
