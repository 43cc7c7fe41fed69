// Exact reuse by row class: the finer rule the engine uses when a load-time probe shows it holds (see
// llama/exactness-probe.ts), instead of matching piece cuts (region-memory.ts).
//
// Why it holds (llama.cpp's CPU kernels, read in ggml-cpu/ops.cpp and measured with KV state bytes on
// SmolLM2 Q4_1): a prompt row's numbers depend on the tokens up to it and on one property of the piece it
// was evaluated in: whether the piece had at least TILED_ROWS rows. From that many rows flash attention takes
// a tiled path; below it, a per-row loop, the same one a decode step takes. Within each path every row is
// computed on its own: 64+66 rows equal 130 in one piece, 5+40 equal 45, twelve one-token steps equal a
// twelve-row piece. (A lone decode row far into the context takes a third, split path unless it runs on one
// thread: llama/decode-threads.ts.) So what a reused prefix must share with a cold evaluation of the new
// prompt is the class of each row ("tiled" or "row"), not the cuts, and:
//   - a reply needs no re-evaluation: its decoded rows are "row" rows, and a later prompt's plan evaluates
//     that reply (the assistant text it sends back) in pieces under TILED_ROWS, so the classes agree;
//   - a prompt may resume anywhere in a shared prefix, not only at a cut both plans share, as long as what is
//     left of a tiled run is evaluated in a piece of TILED_ROWS rows or more.
// Classes are read from piece sizes: a recorded piece of TILED_ROWS rows or more was tiled, a smaller one
// was not (decoded rows are one-row pieces). Cutting a recorded memory short keeps that true (resumeAt).

import {commonPrefix, exactLength, type Reuse} from "./region-memory.ts";

/** Rows of one sequence from which a piece takes the tiled flash-attention path (ggml's GGML_FA_TILE_Q). */
export const TILED_ROWS = 64;

/**
 * Most rows one evaluation takes when consecutive tiled pieces of a plan are evaluated together (mergeTiled). Merged,
 * every row is still tiled, so its numbers are the plan's; the engine's exactness probe checks a piece this size
 * against the same rows in TILED_ROWS pieces. 256 rows evaluated about 1.2x faster than 64-row pieces on SmolLM2
 * at 4,900 tokens (bench:long-prompts: 228 against 186 tok/s; llama-server 230 in its 512-row micro-batches).
 */
export const MERGED_TILED_ROWS = 4 * TILED_ROWS;

/**
 * How many of `pieces` (from the first) one evaluation may take together: consecutive tiled pieces (each of
 * TILED_ROWS rows or more) while their rows stay within `maxRows`; otherwise just the first. Row pieces are never
 * merged (two row pieces together could reach TILED_ROWS and be tiled).
 */
export function mergeTiled(pieces: readonly Span[], maxRows: number): number {
  const rows = ([a, b]: Span) => b - a;
  if (pieces.length === 0 || rows(pieces[0]!) < TILED_ROWS) return Math.min(1, pieces.length);
  let taken = 1;
  let total = rows(pieces[0]!);
  while (taken < pieces.length && rows(pieces[taken]!) >= TILED_ROWS && total + rows(pieces[taken]!) <= maxRows) total += rows(pieces[taken++]!);
  return taken;
}

/** Largest piece of a "row" run: any size under TILED_ROWS keeps the per-row path. */
export const ROW_PIECE = TILED_ROWS - 1;

/** Half-open token ranges [start, end). */
export type Span = readonly [number, number];

/**
 * The cold evaluation plan of a prompt of `length` tokens, from the points where its texts start and end
 * (`boundaries`, as the prompt builder marks them) and the spans of earlier replies (`replySpans`). Each stretch
 * between two such points is tiled when it has at least TILED_ROWS rows and is not a reply (replies were
 * decoded one row at a time); every other stretch is evaluated row by row. Tiled stretches go in pieces of
 * `piece` rows (a remainder under TILED_ROWS joins the last piece, so pieces run up to piece + 63 rows);
 * consecutive row stretches are merged into pieces under TILED_ROWS. A stretch's class depends on nothing
 * after it, so a prompt that continues this one (after a reply) gets the same classes up to where it
 * continues; and the last stretch of a chat prompt (the reply header) is never tiled, so the same prompt
 * again, or one that differs only in its last message, resumes right where it differs.
 */
export function planByRows(length: number, marks: {boundaries: readonly number[]; replySpans: readonly Span[]}, piece: number): number[] {
  const spans = marks.replySpans.map(([s, e]) => [Math.max(0, s), Math.min(e, length)] as const).filter(([s, e]) => e > s);
  const points = new Set<number>([length]);
  for (const b of marks.boundaries) if (b > 0 && b < length && Number.isInteger(b)) points.add(b);
  for (const [s, e] of spans) {
    if (s > 0) points.add(s);
    if (e < length) points.add(e);
  }
  const ends = [...points].sort((x, y) => x - y);
  const inReply = (a: number) => spans.some(([s, e]) => a >= s && a < e);
  const rowPiece = Math.min(piece, ROW_PIECE);
  const cuts: number[] = [];
  let rowStart = -1;
  const closeRows = (end: number) => {
    if (rowStart < 0) return;
    for (let c = rowStart + rowPiece; c < end; c += rowPiece) cuts.push(c);
    cuts.push(end);
    rowStart = -1;
  };
  let a = 0;
  for (const b of ends) {
    const n = b - a;
    if (n >= TILED_ROWS && piece >= TILED_ROWS && !inReply(a)) {
      closeRows(a);
      const whole = Math.floor(n / piece);
      for (let i = 1; i < whole; i++) cuts.push(a + i * piece);
      if (n - whole * piece >= TILED_ROWS) cuts.push(a + whole * piece);
      cuts.push(b);
    } else if (rowStart < 0) {
      rowStart = a;
    }
    a = b;
  }
  closeRows(length);
  return cuts;
}

/** Whether a piece of this many rows was (or will be) tiled. */
function tiled(rows: number): boolean {
  return rows >= TILED_ROWS;
}

/** The piece of `cuts` holding position `at` (start inclusive), or null past the end. */
function pieceAt(cuts: readonly number[], at: number): [number, number] | null {
  let a = 0;
  for (const c of cuts) {
    if (at < c) return [a, c];
    a = c;
  }
  return null;
}

/** The first position below `limit` where the two cut lists give a row a different class (or `limit`). */
function firstClassDifference(x: readonly number[], y: readonly number[], limit: number): number {
  let i = 0;
  let j = 0;
  let ax = 0;
  let ay = 0;
  let at = 0;
  while (at < limit && i < x.length && j < y.length) {
    if (tiled(x[i]! - ax) !== tiled(y[j]! - ay)) return at;
    const next = Math.min(x[i]!, y[j]!);
    at = next;
    if (x[i] === next) ax = x[i++]!;
    if (y[j] === next) ay = y[j++]!;
  }
  return Math.min(at, limit);
}

/**
 * How much of a prompt (with its plan from planByRows) a memory can serve: the shared prefix of tokens and
 * row classes, leaving at least one token to evaluate, then moved back where needed so that (1) what is left
 * of the plan's piece is still tiled when it must be (at least TILED_ROWS rows), and (2) the memory cut short
 * there still reads right (see resumeAt).
 */
export function reusableByRows(memory: {tokens: readonly number[]; cuts: readonly number[]}, prompt: readonly number[], plan: readonly number[]): Reuse {
  const common = commonPrefix(memory.tokens, prompt);
  const limit = Math.min(common, exactLength(memory), prompt.length - 1);
  let at = firstClassDifference(memory.cuts, plan, Math.max(0, limit));
  for (;;) {
    const before = at;
    const planned = pieceAt(plan, at);
    if (planned && at > planned[0] && tiled(planned[1] - planned[0]) && planned[1] - at < TILED_ROWS) at = planned[1] - TILED_ROWS;
    const held = pieceAt(memory.cuts, at);
    if (held && at > held[0] && tiled(held[1] - held[0]) && at - held[0] < TILED_ROWS) at = held[0];
    if (at === before) break;
  }
  return {length: Math.max(0, at), common};
}

/**
 * The cuts of a memory cut short at `at` (a length reusableByRows returned, or a shared cut): the cuts up
 * to it and `at` itself, which closes a "row" piece (any size under TILED_ROWS reads as one) or a tiled
 * piece still TILED_ROWS rows or more. The next piece evaluated from `at` is then recorded on its own.
 */
export function resumeAt(cuts: readonly number[], at: number): number[] {
  const out = cuts.filter((c) => c <= at);
  if (at > 0 && out[out.length - 1] !== at) out.push(at);
  return out;
}
