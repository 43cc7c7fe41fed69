// What a region's KV holds, and how much of a new prompt may reuse it without changing a single number.
//
// Why "cuts": a token's KV depends on the tokens before it and on the shape of the evaluation that computed
// it. Measured with node-llama-cpp 3.22.1 on SmolLM2 (Q4_1, CPU): a prompt cut anywhere into pieces of two
// or more tokens gives the same greedy reply as one piece (20/20), but a token evaluated alone — the last
// prompt token re-fed after a cache hit, a generated token, a prompt fed one token at a time — gets a
// different kernel path (single-row matmuls) and the reply changes (19/20, 9/20, 8/20). Quantisation formats
// whose kernels work on groups of rows make the cut matter too (the Q8_0 runs).
// So every evaluation is cut by one plan that depends only on the tokens: pieces end at absolute multiples
// of the piece size and at the content boundaries the prompt builder marks (where each message's text
// starts and ends). A region records the cuts of the KV it computed that way; a new prompt may reuse a
// prefix only up to a cut both plans share, with every earlier cut shared as well. Then the reused KV is
// exactly what a cold evaluation of the new prompt computes, and greedy output cannot depend on the cache.
// Generated tokens are computed one at a time, so after a reply the region re-evaluates them in pieces
// ("sealing", when the engine is idle or a session keeps the reply: llama/finished-replies.ts); only then do
// they count as reusable.
// That is the "pieces" rule, which holds whatever the kernels do. Where a load-time probe shows more (a row's
// KV depends only on whether its piece had 64 rows or more: llama/exactness-probe.ts), the engine matches
// reuse by row class instead (row-classes.ts): replies are reusable as decoded and prompts resume anywhere in
// a shared prefix. A CutPlan carries which rule its prompt is planned for.

import {commonPrefix, exactLength} from "../../core/prefix.ts";
import {reusableByRows} from "./row-classes.ts";

export {commonPrefix, exactLength};

export interface RegionMemory {
  /** Tokens whose KV the region holds, in order (the exact part and possibly an unsealed tail). */
  tokens: number[];
  /** Ascending piece ends of the exact part; the last one is its length. Empty when nothing is exact. */
  cuts: number[];
  /** performance.now() of the last use, for least-recently-used eviction. */
  lastUsed: number;
  /** Where the sealed reply of the region's last request starts (its prompt length); 0 when none is sealed. */
  replyStart: number;
  /**
   * Set while a reply is decoded, where its rows stop being one-row evaluations: a replacement of several tokens
   * (steering) is evaluated as one piece, and from SPLIT_ROW_FROM one row of it is not what a one-row piece gives.
   */
  decodedExactTo?: number;
}

export function emptyMemory(): RegionMemory {
  return {tokens: [], cuts: [], lastUsed: 0, replyStart: 0};
}

/** The cut plan of tokens [0, length): multiples of `piece`, the given boundaries inside, and `length` itself. */
export function planCuts(length: number, piece: number, boundaries: readonly number[] = []): number[] {
  const set = new Set<number>();
  for (let c = piece; c < length; c += piece) set.add(c);
  for (const b of boundaries) if (b > 0 && b < length && Number.isInteger(b)) set.add(b);
  if (length > 0) set.add(length);
  return [...set].sort((a, b) => a - b);
}

/** The pieces [start, end) from `from` to the end of a plan. `from` must be 0 or one of the plan's cuts. */
export function piecesFrom(plan: readonly number[], from: number): [number, number][] {
  const out: [number, number][] = [];
  let a = from;
  for (const c of plan) {
    if (c <= a) continue;
    out.push([a, c]);
    a = c;
  }
  return out;
}

export interface Reuse {
  /** Tokens that may be reused exactly (a shared cut, ≤ prompt length − 1). */
  length: number;
  /** Tokens the two sequences have in common, whatever the cuts (for miss reasons). */
  common: number;
}

/**
 * A prompt's cold evaluation plan and the rule reused KV must meet to stand in for it: "pieces" (the cuts
 * above, replies sealed), "rows" (the same row class per position: row-classes.ts, chosen at load when the
 * engine's probe shows it holds) or "prefix" (any shared prefix: the rule of a remote llama-server replica,
 * which reuses its slot's KV up to the first differing token whatever its batches were).
 */
export interface CutPlan {
  /** Ascending piece ends; the last one is the prompt's length. */
  cuts: readonly number[];
  match: "pieces" | "rows" | "prefix";
}

/** How much of a prompt a memory can serve under the plan's rule. */
export function reusable(memory: {tokens: readonly number[]; cuts: readonly number[]}, prompt: readonly number[], plan: CutPlan): Reuse {
  if (plan.match === "prefix") return reusableByPrefix(memory, prompt);
  return plan.match === "rows" ? reusableByRows(memory, prompt, plan.cuts) : reusableByPieces(memory, prompt, plan.cuts);
}

/** Any shared prefix of the exact part, leaving at least one prompt token to evaluate. */
export function reusableByPrefix(memory: {tokens: readonly number[]; cuts: readonly number[]}, prompt: readonly number[]): Reuse {
  const common = commonPrefix(memory.tokens, prompt);
  return {length: Math.max(0, Math.min(common, exactLength(memory), prompt.length - 1)), common};
}

/**
 * How much of a prompt (with its cut plan) the memory can serve: the largest cut that both plans share,
 * with all earlier cuts shared and the tokens equal up to it, leaving at least one prompt token to
 * evaluate (the model needs it to produce logits).
 */
export function reusableByPieces(memory: {tokens: readonly number[]; cuts: readonly number[]}, prompt: readonly number[], plan: readonly number[]): Reuse {
  const common = commonPrefix(memory.tokens, prompt);
  let length = 0;
  const cuts = memory.cuts;
  for (let i = 0; i < cuts.length && i < plan.length; i++) {
    const c = cuts[i]!;
    if (c !== plan[i] || c > common || c > prompt.length - 1) break;
    length = c;
  }
  return {length, common};
}
