// The batching policy (all single-token steps ordered by sequence id, or exactly one whole prompt piece,
// alternating, pieces rotating across sequences) and the prompt cut points.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {BatchItem} from "node-llama-cpp";
import {chooseBatch, newBatchPolicyState, STEP_WAIT_MS} from "../../../../src/engine/llama/batch-strategy.ts";
import type {QueuedDecodeView} from "../../../../src/engine/llama/internals.ts";

/** A queued decode of `n` tokens for sequence `seq`: the batch item and its queue entry. */
function decode(seq: number, n: number): {item: BatchItem; view: QueuedDecodeView} {
  const tokens = Array.from({length: n}, (_, i) => 1000 * seq + i);
  const item = {tokens, logits: tokens.map(() => undefined), evaluationPriority: 5} as unknown as BatchItem;
  return {item, view: {sequenceId: seq, tokens}};
}

function pick(s: {lastWasPiece: boolean; lastPieceSequence: number}) {
  return {lastWasPiece: s.lastWasPiece, lastPieceSequence: s.lastPieceSequence};
}

function queueOf(...ds: {item: BatchItem; view: QueuedDecodeView}[]) {
  return {items: ds.map((d) => d.item), queue: ds.map((d) => d.view)};
}

describe("chooseBatch", () => {
  test("steps wait for a generating sequence that has not queued its step, up to STEP_WAIT_MS", () => {
    const s0 = decode(0, 1), s1 = decode(1, 1);
    const {items, queue} = queueOf(s0, s1);
    const state = newBatchPolicyState();
    state.generating = new Set([0, 1, 2]);
    let clock = 100;
    assert.deepEqual(chooseBatch(items, queue, state, () => clock), [], "sequence 2 is generating but not queued: wait");
    assert.equal(state.waitingSince, 100);
    clock = 100 + STEP_WAIT_MS - 0.5;
    assert.deepEqual(chooseBatch(items, queue, state, () => clock), [], "still within the wait");
    clock = 100 + STEP_WAIT_MS;
    const out = chooseBatch(items, queue, state, () => clock);
    assert.deepEqual(out.map((p) => p.item), [s0.item, s1.item], "past the wait, the steps that are there go");
    assert.equal(state.waitsTimedOut, 1);
    assert.equal(state.waitingSince, null);
  });

  test("no wait when every generating sequence has queued", () => {
    const s0 = decode(0, 1), s1 = decode(1, 1);
    const {items, queue} = queueOf(s1, s0);
    const state = newBatchPolicyState();
    state.generating = new Set([0, 1]);
    const out = chooseBatch(items, queue, state, () => 0);
    assert.deepEqual(out.map((p) => p.item), [s0.item, s1.item]);
    assert.equal(state.waitsTimedOut, 0);
  });

  test("a prompt piece never waits for generating sequences", () => {
    const pc = decode(1, 40);
    const {items, queue} = queueOf(pc);
    const state = newBatchPolicyState();
    state.generating = new Set([0]);
    const out = chooseBatch(items, queue, state, () => 0);
    assert.ok(out.length === 1 && out[0]!.item === pc.item);
  });

  test("only single-token steps: all of them, ordered by sequence id, processAmount 1", () => {
    const s2 = decode(2, 1), s0 = decode(0, 1), s3 = decode(3, 1), s1 = decode(1, 1);
    const {items, queue} = queueOf(s2, s0, s3, s1);
    const state = newBatchPolicyState();
    const out = chooseBatch(items, queue, state);
    assert.equal(out.length, 4);
    assert.deepEqual(out.map((p) => p.processAmount), [1, 1, 1, 1]);
    assert.ok(out[0]!.item === s0.item && out[1]!.item === s1.item && out[2]!.item === s2.item && out[3]!.item === s3.item);
    assert.deepEqual(pick(state), {lastWasPiece: false, lastPieceSequence: -1});
  });

  test("steps and pieces alternate: a piece alone and whole, then all steps; pieces rotate across sequences", () => {
    const st0 = decode(0, 1), pc1 = decode(1, 64), st2 = decode(2, 1), pc3 = decode(3, 30);
    const {items, queue} = queueOf(pc3, st2, pc1, st0);
    const state = newBatchPolicyState();

    const first = chooseBatch(items, queue, state);
    assert.equal(first.length, 1);
    assert.ok(first[0]!.item === pc1.item);
    assert.equal(first[0]!.processAmount, 64);
    assert.deepEqual(pick(state), {lastWasPiece: true, lastPieceSequence: 1});

    const second = chooseBatch(items, queue, state);
    assert.equal(second.length, 2);
    assert.ok(second[0]!.item === st0.item && second[1]!.item === st2.item);
    assert.deepEqual(second.map((p) => p.processAmount), [1, 1]);
    assert.deepEqual(pick(state), {lastWasPiece: false, lastPieceSequence: 1});

    const third = chooseBatch(items, queue, state);
    assert.equal(third.length, 1);
    assert.ok(third[0]!.item === pc3.item);
    assert.equal(third[0]!.processAmount, 30);

    const fourth = chooseBatch(items, queue, state);
    assert.deepEqual(fourth.map((p) => p.processAmount), [1, 1]);

    // Past the highest sequence with a piece, the rotation wraps to the lowest.
    const fifth = chooseBatch(items, queue, state);
    assert.ok(fifth[0]!.item === pc1.item);
    assert.equal(fifth[0]!.processAmount, 64);
  });

  test("only pieces: one whole piece per dispatch, rotating", () => {
    const p0 = decode(0, 10), p2 = decode(2, 64), p1 = decode(1, 5);
    const {items, queue} = queueOf(p2, p0, p1);
    const state = newBatchPolicyState();
    const picked = [0, 1, 2, 3].map(() => {
      const out = chooseBatch(items, queue, state);
      assert.equal(out.length, 1);
      return [queue[items.indexOf(out[0]!.item)]!.sequenceId, out[0]!.processAmount];
    });
    assert.deepEqual(picked, [[0, 10], [1, 5], [2, 64], [0, 10]]);
  });

  test("a piece is chosen after steps even if the last piece came from the same sequence", () => {
    const st0 = decode(0, 1), pc1 = decode(1, 64);
    const {items, queue} = queueOf(st0, pc1);
    const state = {...newBatchPolicyState(), lastWasPiece: false, lastPieceSequence: 1};
    const out = chooseBatch(items, queue, state);
    assert.ok(out.length === 1 && out[0]!.item === pc1.item);
    assert.equal(out[0]!.processAmount, 64);
  });

  test("nothing queued: an empty batch", () => {
    const state = newBatchPolicyState();
    assert.deepEqual(chooseBatch([], [], state), []);
    assert.deepEqual(pick(state), {lastWasPiece: false, lastPieceSequence: -1});
  });

  test("steps that go alone take turns: each lone step by itself in sequence order, then the batch of the others", () => {
    const s0 = decode(0, 1), s1 = decode(1, 1), s2 = decode(2, 1), s3 = decode(3, 1);
    const {items, queue} = queueOf(s3, s1, s0, s2);
    const state = newBatchPolicyState();
    state.generating = new Set([0, 1, 2, 3]);
    const alone = (seq: number) => seq === 1 || seq === 3;
    const round = () => chooseBatch(items, queue, state, () => 0, alone).map((p) => queue[items.indexOf(p.item)]!.sequenceId);
    assert.deepEqual(round(), [1]);
    assert.deepEqual(round(), [3]);
    assert.deepEqual(round(), [0, 2], "the others together: a step that goes alone never joins them");
    assert.deepEqual(round(), [1], "and round again");
    assert.equal(state.waitsTimedOut, 0);
  });

  test("the batch never waits for a generating sequence whose step goes alone; a lone step goes while the batch waits", () => {
    const s0 = decode(0, 1), s2 = decode(2, 1);
    const state = newBatchPolicyState();
    state.generating = new Set([0, 1]);
    // Sequence 1 goes alone and has not queued: the batch {0} does not wait for it.
    let {items, queue} = queueOf(s0);
    const out = chooseBatch(items, queue, state, () => 0, (seq) => seq === 1);
    assert.deepEqual(out.map((p) => p.item), [s0.item]);
    assert.equal(state.waitingSince, null);
    // Sequence 1 does not go alone and has not queued: the batch {0} waits, and the lone step of 2 goes meanwhile.
    ({items, queue} = queueOf(s0, s2));
    const fresh = newBatchPolicyState();
    fresh.generating = new Set([0, 1, 2]);
    const first = chooseBatch(items, queue, fresh, () => 0, (seq) => seq === 2);
    assert.deepEqual(first.map((p) => p.item), [s2.item]);
    assert.equal(fresh.waitingSince, 0, "the batch is waiting");
    assert.deepEqual(chooseBatch(items, queue, fresh, () => STEP_WAIT_MS / 2, (seq) => seq === 2).map((p) => p.item), [s2.item],
      "the batch still waits: the lone step goes again (its next step, in the engine)");
    assert.deepEqual(chooseBatch(items, queue, fresh, () => STEP_WAIT_MS, (seq) => seq === 2).map((p) => p.item), [s0.item]);
    assert.equal(fresh.waitsTimedOut, 1);
  });

  test("a queue that does not match the items throws", () => {
    const a = decode(0, 1), b = decode(1, 1);
    assert.throws(() => chooseBatch([a.item, b.item], [a.view], newBatchPolicyState()), {
      message: "batch strategy: 2 items but 1 queued decodes (node-llama-cpp internals changed?)",
    });
  });
});

