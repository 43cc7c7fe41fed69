// The batching policy handed to node-llama-cpp. Three facts shape it:
// 1. llama.cpp (non-unified KV, one stream per sequence) splits a batch into ubatches with `split_equal`:
//    a ubatch holds only consecutive sequence ids, each contributing the same number of tokens. A prompt
//    piece batched beside another sequence's decode token is therefore cut into a 1-token part and the
//    rest, and its numbers (and so greedy output) would depend on what else was running.
// 2. Decode steps of many sequences share the weight reads, so they should go in one batch, ordered by id.
// 3. The library loops straight into the next batch once sampling is done, before the sequence sampled
//    last has queued its next step. Dispatching then would leave that sequence out of every other step
//    (always the same one, as sampling finishes in id order). So when a sequence that is generating has
//    not queued its step yet, the policy waits for it, briefly: returning no items makes the library
//    loop again after a microtask turn, which is all the sequence's own code needs.
// So a dispatch is either every pending single-token step (ordered by sequence id) or exactly one prompt
// piece on its own, whole. Pieces and steps alternate so neither starves; pieces rotate across sequences.
// A speculative step (the token just generated plus a prompt-lookup draft, see prompt-lookup.ts) has two
// tokens and goes as a piece: split_equal would otherwise cut it beside other sequences' steps.
// One exception to "every step together": a one-token evaluation far into its region (decode-threads.ts,
// aloneOnEveryThread) goes in a dispatch of its own, on every thread, whoever else is generating, so that its
// numbers never depend on the company it kept. Such steps take turns with the batch of the other steps.

import type {BatchItem, PrioritizedBatchItem} from "node-llama-cpp";
import type {QueuedDecodeView} from "./internals.ts";

/** Longest a step batch waits for a generating sequence that has not queued its step yet. */
export const STEP_WAIT_MS = 3;

export interface BatchPolicyState {
  lastWasPiece: boolean;
  lastPieceSequence: number;
  /** Sequences between two steps of their generation: each will queue a single-token step shortly. */
  generating: Set<number>;
  waitingSince: number | null;
  /** Dispatches sent without a generating sequence because it did not queue in time (for tests and tuning). */
  waitsTimedOut: number;
  /** When each sequence's pending single-token step was first seen queued (ms). */
  stepQueuedAt: Map<number, number>;
  /** Per sequence: ms its steps spent queued before dispatch (behind a prompt piece, or waiting for the others). */
  batchWaitMs: number[];
  /** The sequence whose lone step went last (-1: the batch of the other steps did, or nothing yet). */
  lastAloneSequence: number;
}

export function newBatchPolicyState(): BatchPolicyState {
  return {lastWasPiece: false, lastPieceSequence: -1, generating: new Set(), waitingSince: null, waitsTimedOut: 0, stepQueuedAt: new Map(), batchWaitMs: [],
    lastAloneSequence: -1};
}

/**
 * The next dispatch. `alone(seq)` says whether that sequence's one-token step must be dispatched by itself
 * (asked also of generating sequences that have not queued yet: a batch never waits for one that goes alone).
 */
export function chooseBatch(items: readonly BatchItem[], queue: readonly QueuedDecodeView[], state: BatchPolicyState,
  now: () => number = () => performance.now(), alone: (seq: number) => boolean = () => false): PrioritizedBatchItem[] {
  if (queue.length !== items.length) {
    throw new Error(`batch strategy: ${items.length} items but ${queue.length} queued decodes (node-llama-cpp internals changed?)`);
  }
  const steps: {item: BatchItem; seq: number}[] = [];
  const pieces: {item: BatchItem; seq: number}[] = [];
  const at = now();
  items.forEach((item, i) => {
    const entry = {item, seq: queue[i]!.sequenceId};
    (item.tokens.length === 1 ? steps : pieces).push(entry);
    if (item.tokens.length === 1 && !state.stepQueuedAt.has(entry.seq)) state.stepQueuedAt.set(entry.seq, at);
  });
  if (pieces.length > 0 && (steps.length === 0 || !state.lastWasPiece)) {
    pieces.sort((a, b) => a.seq - b.seq);
    const next = pieces.find((p) => p.seq > state.lastPieceSequence) ?? pieces[0]!;
    state.lastWasPiece = true;
    state.lastPieceSequence = next.seq;
    return [{item: next.item, processAmount: next.item.tokens.length}];
  }
  const queued = new Set(items.map((_, i) => queue[i]!.sequenceId));
  const lone = steps.filter((s) => alone(s.seq)).sort((a, b) => a.seq - b.seq);
  const together = steps.filter((s) => !alone(s.seq));
  const missing = [...state.generating].some((seq) => !queued.has(seq) && !alone(seq));
  let batchReady = together.length > 0;
  if (batchReady && missing) {
    state.waitingSince ??= at;
    if (at - state.waitingSince < STEP_WAIT_MS) batchReady = false;
  }
  // Turns: each lone step in sequence order, then the batch of the others, and round again.
  const nextLone = lone.find((s) => s.seq > state.lastAloneSequence) ?? (batchReady ? undefined : lone[0]);
  if (nextLone) {
    state.lastWasPiece = false;
    state.lastAloneSequence = nextLone.seq;
    noteDispatched(state, [nextLone], at);
    return [{item: nextLone.item, processAmount: 1}];
  }
  if (!batchReady) return [];
  if (missing) state.waitsTimedOut++;
  state.waitingSince = null;
  state.lastWasPiece = false;
  state.lastAloneSequence = -1;
  together.sort((a, b) => a.seq - b.seq);
  noteDispatched(state, together, at);
  return together.map(({item}) => ({item, processAmount: 1}));
}

/** Adds each dispatched step's time in the queue to its sequence's batch wait. */
function noteDispatched(state: BatchPolicyState, dispatched: readonly {seq: number}[], at: number): void {
  for (const {seq} of dispatched) {
    state.batchWaitMs[seq] = (state.batchWaitMs[seq] ?? 0) + at - (state.stepQueuedAt.get(seq) ?? at);
    state.stepQueuedAt.delete(seq);
  }
}
