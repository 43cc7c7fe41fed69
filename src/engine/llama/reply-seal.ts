// Sealing a finished reply: its tokens were decoded one at a time, so they are evaluated again in prompt
// pieces (cut by the same plan a cold prompt would use) before a later prompt may reuse them exactly
// (see kv/region-memory.ts). When seals run is the region pool's business (region-pool.ts).

import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {planCuts, type RegionMemory} from "../kv/region-memory.ts";

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
