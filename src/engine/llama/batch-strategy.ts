// The batching policy handed to node-llama-cpp. Two facts shape it:
// 1. llama.cpp (non-unified KV, one stream per sequence) splits a batch into ubatches with `split_equal`:
//    a ubatch holds only consecutive sequence ids, each contributing the same number of tokens. A prompt
//    piece batched beside another sequence's decode token is therefore cut into a 1-token part and the
//    rest, and its numbers (and so greedy output) would depend on what else was running.
// 2. Decode steps of many sequences share the weight reads, so they should go in one batch, ordered by id.
// So a dispatch is either every pending single-token step (ordered by sequence id) or exactly one prompt
// piece on its own, whole. Pieces and steps alternate so neither starves; pieces rotate across sequences.

import type {BatchItem, PrioritizedBatchItem} from "node-llama-cpp";
import type {QueuedDecodeView} from "./internals.ts";

export interface BatchPolicyState {
  lastWasPiece: boolean;
  lastPieceSequence: number;
}

export function newBatchPolicyState(): BatchPolicyState {
  return {lastWasPiece: false, lastPieceSequence: -1};
}

export function chooseBatch(items: readonly BatchItem[], queue: readonly QueuedDecodeView[], state: BatchPolicyState): PrioritizedBatchItem[] {
  if (queue.length !== items.length) throw new Error(`batch strategy: ${items.length} items but ${queue.length} queued decodes (node-llama-cpp internals changed?)`);
  const steps: {item: BatchItem; seq: number}[] = [];
  const pieces: {item: BatchItem; seq: number}[] = [];
  items.forEach((item, i) => {
    const entry = {item, seq: queue[i]!.sequenceId};
    (item.tokens.length === 1 ? steps : pieces).push(entry);
  });
  if (pieces.length > 0 && (steps.length === 0 || !state.lastWasPiece)) {
    pieces.sort((a, b) => a.seq - b.seq);
    const next = pieces.find((p) => p.seq > state.lastPieceSequence) ?? pieces[0]!;
    state.lastWasPiece = true;
    state.lastPieceSequence = next.seq;
    return [{item: next.item, processAmount: next.item.tokens.length}];
  }
  state.lastWasPiece = false;
  steps.sort((a, b) => a.seq - b.seq);
  return steps.map(({item}) => ({item, processAmount: 1}));
}
