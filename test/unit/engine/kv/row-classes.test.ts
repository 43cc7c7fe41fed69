// Reuse matched by row class (src/engine/kv/row-classes.ts): the cold plan, how much a memory can serve, and
// how a memory cut short keeps its classes readable.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {exactLength, reusable} from "../../../../src/engine/kv/region-memory.ts";
import {MERGED_TILED_ROWS, mergedRowsFor, mergeTiled, planByRows, resumeAt, reusableByRows, rowClass, SPLIT_ROW_FROM, TILED_ROWS}
  from "../../../../src/engine/kv/row-classes.ts";

const seq = (n: number, from = 0) => Array.from({length: n}, (_, i) => from + i);
/** No message boundaries, only reply spans. */
const rs = (replySpans: [number, number][]) => ({boundaries: [], replySpans});
/** Per row: the class of its piece (what reuse compares). */
const classes = (cuts: readonly number[], upTo: number) =>
  cuts.flatMap((c, i) => {
    const a = i > 0 ? cuts[i - 1]! : 0;
    return Array<string>(c - a).fill(rowClass(a, c));
  }).slice(0, upTo);
const sizes = (cuts: readonly number[]) => cuts.map((c, i) => c - (i > 0 ? cuts[i - 1]! : 0));

describe("planByRows", () => {
  test("a run of 64 rows or more is tiled in pieces of `piece` rows, a short remainder joining the last", () => {
    assert.deepEqual(planByRows(447, rs([]), 64), [64, 128, 192, 256, 320, 447]);
    assert.deepEqual(planByRows(200, rs([]), 64), [64, 128, 200]);
    assert.deepEqual(planByRows(256, rs([]), 64), [64, 128, 192, 256]);
    assert.deepEqual(planByRows(64, rs([]), 64), [64]);
    assert.deepEqual(planByRows(120, rs([]), 100), [120]);
    assert.deepEqual(planByRows(300, rs([]), 100), [100, 200, 300]);
    assert.deepEqual(planByRows(230, rs([]), 100), [100, 230], "30 left over joins the last piece");
    assert.deepEqual(planByRows(270, rs([]), 100), [100, 200, 270], "70 left over is a tiled piece of its own");
  });
  test("a run under 64 rows, and any run when pieces are under 64, is evaluated row by row in pieces under 64", () => {
    assert.deepEqual(planByRows(40, rs([]), 64), [40]);
    assert.deepEqual(planByRows(63, rs([]), 64), [63]);
    assert.deepEqual(planByRows(100, rs([]), 32), [32, 64, 96, 100]);
    assert.ok(sizes(planByRows(100, rs([]), 32)).every((n) => n < TILED_ROWS));
  });
  test("reply spans are row pieces under 64 rows before SPLIT_ROW_FROM and one-row pieces from it; the runs around them are planned on their own", () => {
    assert.deepEqual(planByRows(300, rs([[100, 180]]), 64), [100, 163, 180, 300]);
    const plan = planByRows(500, rs([[100, 240], [300, 310]]), 64);
    assert.deepEqual(plan, [100, 163, 226, 289, 300, ...seq(10, 301), 374, 500],
      "[100, 310) is one stretch of row pieces (both replies and the 60 rows between), the second reply's rows one at a time; 190 tiled rows after");
    assert.deepEqual(planByRows(130, rs([[0, 10], [120, 130]]), 64), [10, 120, 130]);
    assert.deepEqual(planByRows(100, rs([[90, 200]]), 64), [90, 100], "a span past the end is cut at the end");
  });
  test("a reply that crosses SPLIT_ROW_FROM: row pieces before it, split rows from it, as it was decoded", () => {
    const plan = planByRows(400, rs([[200, 260]]), 64);
    assert.deepEqual(plan, [64, 128, 200, 240, ...seq(20, 241), 324, 400]);
    assert.deepEqual(classes(plan, 400).slice(199, 262), ["tiled", ...Array(40).fill("row"), ...Array(20).fill("split"), "tiled", "tiled"]);
    assert.equal(rowClass(SPLIT_ROW_FROM - 1, SPLIT_ROW_FROM), "row");
    assert.equal(rowClass(SPLIT_ROW_FROM, SPLIT_ROW_FROM + 1), "split");
    assert.equal(rowClass(SPLIT_ROW_FROM, SPLIT_ROW_FROM + 2), "row");
  });
  test("stretches between message boundaries are classed on their own: long ones tiled, short ones row by row (merged)", () => {
    // system 28 | header 5 | user 30 | header 5: all short, one row piece.
    assert.deepEqual(planByRows(68, {boundaries: [28, 33, 63], replySpans: []}, 64), [63, 68]);
    // system 2,000 | header 5 | user 70 | header 5.
    const plan = planByRows(2080, {boundaries: [2000, 2005, 2075], replySpans: []}, 64);
    assert.deepEqual(plan.slice(-4), [1856, 2000, 2005, 2075, 2080].slice(-4));
    assert.deepEqual(sizes(plan).slice(-3), [5, 70, 5]);
    assert.ok(sizes(plan).slice(0, -3).every((n) => n >= TILED_ROWS), "the system message is tiled");
  });
  test("prefix-stable: a turn that continues a prompt after a reply gives the earlier prompt's rows the same classes", () => {
    for (const first of [40, 63, 64, 100, 447, 1000]) {
      const next = planByRows(first + 200, rs([[first, first + 48]]), 64);
      assert.deepEqual(classes(next, first), classes(planByRows(first, rs([]), 64), first), `first prompt of ${first}`);
    }
  });
});

describe("reusableByRows", () => {
  const turn1 = seq(447);
  const plan1 = planByRows(447, rs([]), 64);
  // Turn 1 evaluated by its plan, then 47 reply tokens decoded one at a time (the 48th was sampled, never evaluated).
  const reply = seq(48, 5000);
  const afterReply = {tokens: [...turn1, ...reply.slice(0, 47)], cuts: [...plan1, ...seq(47, 448)]};

  test("a follow-up resumes after every decoded reply token", () => {
    const turn2 = [...turn1, ...reply, ...seq(30, 9000)];
    const plan2 = planByRows(turn2.length, rs([[447, 495]]), 64);
    assert.equal(reusableByRows(afterReply, turn2, plan2).length, 494);
    assert.equal(reusable(afterReply, turn2, {cuts: plan2, match: "rows"}).length, 494, "reusable() dispatches on the plan's rule");
  });
  test("a follow-up whose plan evaluates the reply tiled (no reply span marked) stops where the classes part", () => {
    const turn2 = [...turn1, ...reply, ...seq(30, 9000)];
    const plan = planByRows(turn2.length, rs([]), 64);
    assert.ok(reusableByRows(afterReply, turn2, plan).length <= 447);
  });
  test("a prompt that leaves a shared tiled run re-evaluates at least 64 of its rows, from where the memory still reads as tiled", () => {
    const other = [...seq(400), ...seq(49, 7000)];
    const plan = planByRows(other.length, rs([]), 64);
    assert.deepEqual(plan, [64, 128, 192, 256, 320, 384, 449]);
    assert.equal(reusableByRows({tokens: turn1, cuts: plan1}, other, plan).length, 385, "449 - 64");
    const early = [...seq(350), ...seq(99, 7000)];
    assert.equal(reusableByRows({tokens: turn1, cuts: plan1}, early, planByRows(449, rs([]), 64)).length, 320,
      "from 350 the plan's piece [320, 384) would keep 34 rows, too few to be tiled: back to its start");
    // A memory whose tiled pieces lie on another grid: [50, 100) and [100, 180) after a 50-row reply span.
    const memory = {tokens: seq(180), cuts: [50, 100, 180]};
    const prompt = [...seq(150), ...seq(150, 7000)];
    const plan3 = planByRows(300, rs([[0, 50]]), 64);
    assert.deepEqual(plan3, [50, 114, 178, 300]);
    assert.equal(reusableByRows(memory, prompt, plan3).length, 50,
      "150 leaves 28 of the plan's [114, 178): 114 would leave 14 rows of the memory's [100, 180): 100 leaves 14 of the plan's [50, 114): 50");
  });
  test("the same prompt again re-evaluates its last tiled piece", () => {
    assert.equal(reusableByRows({tokens: turn1, cuts: plan1}, turn1, plan1).length, 320);
    const short = seq(40);
    assert.equal(reusableByRows({tokens: short, cuts: [40]}, short, [40]).length, 39, "a row run resumes one token before the end");
  });
  test("rows of different classes are never reused", () => {
    const shortTurn = {tokens: seq(40), cuts: [40]};
    const long = seq(200);
    assert.equal(reusableByRows(shortTurn, long, planByRows(200, rs([]), 64)).length, 0, "40 row-path rows against a tiled run");
    assert.equal(reusableByRows({tokens: seq(200), cuts: [64, 128, 200]}, [...seq(40), 9], [41]).length, 0);
  });
  test("nothing past the exact part, the common prefix, or the prompt's last token", () => {
    assert.equal(reusableByRows({tokens: seq(200), cuts: [40]}, seq(300), planByRows(300, rs([[40, 300]]), 64)).length, 40);
    assert.equal(reusableByRows({tokens: [], cuts: []}, seq(100), planByRows(100, rs([]), 64)).length, 0);
    assert.equal(exactLength({cuts: []}), 0);
  });
});

describe("reusableByRows with message boundaries", () => {
  test("a classifier loop: the shared system message and header are reused, whatever the item's length", () => {
    const system = seq(33);
    const item1 = [...system, ...seq(20, 1000), ...seq(5, 2000)];
    const item2 = [...system, ...seq(90, 3000), ...seq(5, 2000)];
    const memory = {tokens: item1, cuts: planByRows(item1.length, {boundaries: [28, 33, 53], replySpans: []}, 64)};
    assert.equal(reusableByRows(memory, item2, planByRows(item2.length, {boundaries: [28, 33, 123], replySpans: []}, 64)).length, 33);
  });
  test("the same chat prompt again re-evaluates its last two tokens (the reply header is a row stretch; one row alone would be split)", () => {
    const prompt = seq(2080);
    const plan = planByRows(2080, {boundaries: [2000, 2005, 2075], replySpans: []}, 64);
    assert.equal(reusableByRows({tokens: prompt, cuts: plan}, prompt, plan).length, 2078);
    const short = seq(100);
    const shortPlan = planByRows(100, {boundaries: [30, 95], replySpans: []}, 64);
    assert.equal(reusableByRows({tokens: short, cuts: shortPlan}, short, shortPlan).length, 99, "before SPLIT_ROW_FROM one row alone is a row row");
  });
  test("a memory cut short never leaves one row of a row piece past SPLIT_ROW_FROM (it would read as split)", () => {
    // The memory evaluated [2075, 2080) as one row piece; the new prompt shares 2076 tokens.
    const a = seq(2080);
    const b = [...seq(2076), ...seq(10, 9000)];
    const planA = planByRows(2080, {boundaries: [2000, 2005, 2075], replySpans: []}, 64);
    const planB = planByRows(2086, {boundaries: [2000, 2005, 2075], replySpans: []}, 64);
    assert.deepEqual(planB.slice(-1), [2086], "[2075, 2086) one row piece");
    assert.equal(reusableByRows({tokens: a, cuts: planA}, b, planB).length, 2075);
  });
  test("a last message that differs inside a tiled stretch: at least 64 of its rows are evaluated again", () => {
    const a = seq(2080);
    const b = [...seq(2040), ...seq(40, 9000)];
    const plan = planByRows(2080, {boundaries: [2000, 2005, 2075], replySpans: []}, 64);
    assert.equal(reusableByRows({tokens: a, cuts: plan}, b, plan).length, 2005, "the user text [2005, 2075) is 70 rows: from its start");
  });
});

describe("resumeAt", () => {
  // Only at the lengths reusableByRows returns: never where a tiled piece would be left under 64 rows.
  test("cut inside a row piece or a tiled piece still 64 rows long: the cut is recorded", () => {
    assert.deepEqual(resumeAt([64, 128, 140, 141, 142], 141), [64, 128, 140, 141]);
    assert.deepEqual(resumeAt([64, 100, 110], 105), [64, 100, 105], "[100, 105) reads as a row piece: it was part of one");
    assert.deepEqual(resumeAt([64, 200], 150), [64, 150], "[64, 150) is 86 rows: still tiled");
    assert.deepEqual(resumeAt([64, 128], 128), [64, 128]);
    assert.deepEqual(resumeAt([64, 128], 0), []);
  });
});

describe("mergedRowsFor", () => {
  test("512 rows where the region holds them, else the largest power-of-two tile count that fits", () => {
    assert.equal(MERGED_TILED_ROWS, 512);
    assert.equal(mergedRowsFor(8192), 512);
    assert.equal(mergedRowsFor(512), 512);
    assert.equal(mergedRowsFor(511), 256);
    assert.equal(mergedRowsFor(256), 256, "the smallest region SVC_CTX_SIZE allows");
  });
});

describe("mergeTiled", () => {
  const spans = (cuts: number[], from = 0) => cuts.map((c, i) => [i > 0 ? cuts[i - 1]! : from, c] as [number, number]);
  test("consecutive tiled pieces go together up to the row limit; every merged piece is still tiled", () => {
    const plan = planByRows(700, rs([]), 64);
    assert.equal(mergeTiled(spans(plan), MERGED_TILED_ROWS), 8, "8 x 64 = 512 rows");
    assert.equal(mergeTiled(spans(plan), 256), 4, "4 x 64 = 256 rows");
    assert.equal(mergeTiled(spans(plan), 200), 3);
    assert.equal(mergeTiled(spans(plan), 64), 1, "a limit of one piece merges nothing");
    assert.equal(mergeTiled(spans(plan), 10), 1, "the first piece always goes, whatever the limit");
    assert.equal(mergeTiled(spans([64, 128, 192, 319]), 256), 3, "a 127-row piece would pass 256 rows: left for the next evaluation");
  });
  test("row pieces are never merged, and a tiled run stops at the first row piece", () => {
    assert.equal(mergeTiled(spans([40, 80, 120]), MERGED_TILED_ROWS), 1, "40 + 40 rows would be tiled together");
    assert.equal(mergeTiled(spans([64, 128, 150, 214]), MERGED_TILED_ROWS), 2, "stops before the 22-row piece");
    assert.equal(mergeTiled([], MERGED_TILED_ROWS), 0);
  });
  test("a merged evaluation leaves the same row classes as the plan", () => {
    const plan = planByRows(1000, {boundaries: [300, 310, 700], replySpans: []}, 64);
    const pieces = spans(plan);
    const merged: number[] = [];
    for (let i = 0; i < pieces.length;) {
      const take = mergeTiled(pieces.slice(i), MERGED_TILED_ROWS);
      merged.push(pieces[i + take - 1]![1]);
      i += take;
    }
    assert.ok(merged.length < plan.length, "something was merged");
    assert.deepEqual(classes(merged, 1000), classes(plan, 1000));
  });
});
