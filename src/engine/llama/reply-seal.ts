// Sealing a finished reply: its tokens were decoded one at a time, so they are evaluated again in prompt
// pieces (cut by the same plan a cold prompt would use) before a later prompt may reuse them exactly
// (see kv/region-memory.ts). When seals run is the region pool's business (region-pool.ts). Where reuse is
// matched by row class instead (kv/row-classes.ts), a reply is only recorded as decoded (recordDecodedReply).

import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {commonPrefix, planCuts, type RegionMemory} from "../kv/region-memory.ts";

export interface Seal {
  done: Promise<void>;
  abort(): void;
  /** A session keeps the result: the seal may not be cut short. */
  keep: boolean;
  /** The prompt and reply being sealed (the region's tokens when it is done). */
  tokens: readonly number[];
  promptLength: number;
  /** Reply tokens re-evaluated so far. */
  progress: number;
}

/** A finished reply left unsealed until the engine is idle. */
export interface PendingSeal {
  /** Where the tokens still to seal start (the prompt's end, or where an interrupted seal stopped). */
  promptLength: number;
  generated: readonly number[];
  boundaries: readonly number[];
  /** Where the reply starts (the prompt's end). */
  replyStart: number;
}

/** Reply tokens a seal still has to evaluate. */
export function sealLeft(seal: Seal): number {
  return seal.tokens.length - seal.promptLength - seal.progress;
}

/**
 * Evaluates `reply.generated` after the region's first `reply.promptLength` tokens (the caller has erased the
 * rest) in the plan's pieces, recording each piece's cut; stops before a piece when `stop()` says so.
 */
export async function evaluateReply(r: {seq: LlamaContextSequence; memory: RegionMemory}, pieceSize: number, reply: PendingSeal,
  stop: () => boolean, progress: (tokens: number) => void): Promise<void> {
  const {promptLength, generated, boundaries} = reply;
  r.memory.tokens = r.memory.tokens.slice(0, promptLength);
  const end = promptLength + generated.length;
  let a = promptLength;
  for (const c of planCuts(end, pieceSize, [promptLength, ...boundaries.filter((b) => b > promptLength && b < end)])) {
    if (c <= promptLength) continue;
    if (stop()) return;
    const piece = generated.slice(a - promptLength, c - promptLength);
    await r.seq.evaluateWithoutGeneratingNewTokens(piece as Token[]);
    r.memory.tokens.push(...piece);
    r.memory.cuts.push(c);
    a = c;
    progress(c - promptLength);
  }
  r.memory.replyStart = reply.replyStart;
}

/**
 * Reuse matched by row class (kv/row-classes.ts): a decoded reply needs no seal. Records the tokens the
 * sequence really holds (the last sampled token was never evaluated; anything the library left past what
 * was emitted is erased) as one-row pieces, which is how they were computed (up to a replacement that was not:
 * RegionMemory.decodedExactTo). Their classes follow from that (kv/row-classes.ts, rowClass).
 */
export async function recordDecodedReply(r: {seq: LlamaContextSequence; memory: RegionMemory}, promptLength: number): Promise<void> {
  const held = r.seq.contextTokens;
  const exact = commonPrefix(r.memory.tokens, held);
  if (exact < promptLength) throw new Error(`the region holds ${exact} of the prompt's ${promptLength} tokens`);
  if (held.length > exact) await r.seq.eraseContextTokenRanges([{start: exact, end: held.length}]);
  r.memory.tokens = r.memory.tokens.slice(0, exact);
  const to = Math.min(exact, r.memory.decodedExactTo ?? exact);
  r.memory.decodedExactTo = undefined;
  for (let c = promptLength + 1; c <= to; c++) r.memory.cuts.push(c);
  r.memory.replyStart = promptLength;
}
