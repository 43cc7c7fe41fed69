// Exact reuse by row class: the finer rule the engine uses when a load-time probe shows it holds (see
// llama/exactness-probe.ts), instead of matching piece cuts (region-memory.ts).
//
// Why it holds (llama.cpp's CPU kernels, read in ggml-cpu/ops.cpp and measured with KV state bytes on
// SmolLM2 Q4_1): a prompt row's numbers depend on the tokens up to it and on one property of the piece it
// was evaluated in: whether the piece had at least TILED_ROWS rows. From that many rows flash attention takes
// a tiled path; below it, a per-row loop, the same one a decode step takes. Within each path every row is
// computed on its own: 64+66 rows equal 130 in one piece, 5+40 equal 45, twelve one-token steps equal a
// twelve-row piece. (A lone decode row far into the context takes a third, split path unless it runs on one
// thread.) The engine gives that path a class of its own: from SPLIT_ROW_FROM on, every one-row evaluation
// (a generated token's step, a one-token prompt piece) runs alone on every thread (llama/decode-threads.ts), so
// a one-row piece there is a "split" row, the same whoever else was running. So what a reused prefix must share
// with a cold evaluation of the new prompt is the class of each row ("tiled", "row" or "split"), not the cuts:
//   - a reply needs no re-evaluation: its decoded rows are one-row pieces ("row" rows before SPLIT_ROW_FROM,
//     "split" rows from it), and a later prompt's plan evaluates that reply (the assistant text it sends back)
//     the same way: in pieces under TILED_ROWS before SPLIT_ROW_FROM, one row at a time from it;
//   - a prompt may resume anywhere in a shared prefix, not only at a cut both plans share, as long as what is
//     left of a piece keeps its class (a tiled run TILED_ROWS rows or more; a row piece more than one row past
//     SPLIT_ROW_FROM, where one row alone would be a split row).
// Classes are read from piece sizes and places (rowClass). Cutting a recorded memory short keeps them (resumeAt).

import {commonPrefix, exactLength, type Reuse} from "./region-memory.ts";

/** Rows of one sequence from which a piece takes the tiled flash-attention path (ggml's GGML_FA_TILE_Q). */
export const TILED_ROWS = 64;

/**
 * Most rows one evaluation takes when consecutive tiled pieces of a plan are evaluated together (mergeTiled). Merged,
 * every row is still tiled, so its numbers are the plan's; the engine's exactness probe checks a piece this size
 * (mergedRowsFor) against the same rows in TILED_ROWS pieces.
 *
 * Why 512, measured in the kernel (ggml-cpu/ops.cpp, the tiled flash-attention path): an evaluation's rows x heads
 * are cut into 4 chunks per thread, a chunk into tiles of at most 64 query rows that stop at the chunk's and the
 * head's end, and every tile, full or not, multiplies 64 rows against all the keys. So with SmolLM2's 9 heads on 2
 * threads a 64-row evaluation does 16 tiles of work for 9 tiles of rows (78% waste), 128 rows 33%, 256 rows 11%,
 * 512 rows none (llama-server's micro-batch). Far into a context that work is most of a prompt's cost: at 16k tokens
 * svc prefilled at 0.72-0.75x llama-server's rate while it merged 128 or 256 rows.
 */
export const MERGED_TILED_ROWS = 8 * TILED_ROWS;

/** The merge size for regions of `positions` (at least 256): MERGED_TILED_ROWS, or the largest power-of-two tile count that fits. */
export function mergedRowsFor(positions: number): number {
  let rows = MERGED_TILED_ROWS;
  while (rows > TILED_ROWS && rows > positions) rows /= 2;
  return rows;
}

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

/**
 * From this position on, a one-row evaluation is a "split" row: llama.cpp pads a stream's attention window to
 * multiples of 256 cells, and from 512 cells its CPU flash attention splits a ubatch's only query row across the
 * threads and merges the partial sums, a rounding of its own (and one that depends on the thread count). The
 * engine runs every such row alone on every thread (llama/decode-threads.ts). A margin below 256 keeps clear of
 * the padding rule's edge: rows between here and 256 take the one-pass loop all the same, and counting them as
 * split only costs reuse, never exactness.
 */
export const SPLIT_ROW_FROM = 240;

export type RowClass = "tiled" | "row" | "split";

/** The class of every row of the piece [a, b). */
export function rowClass(a: number, b: number): RowClass {
  if (b - a >= TILED_ROWS) return "tiled";
  return b - a === 1 && a >= SPLIT_ROW_FROM ? "split" : "row";
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
 * consecutive row stretches are merged into pieces under TILED_ROWS, except that a reply's rows from
 * SPLIT_ROW_FROM on are pieces of one row each ("split" rows, as they were decoded). A stretch's class depends
 * on nothing after it, so a prompt that continues this one (after a reply) gets the same classes up to where it
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
  const splitRow = (at: number) => at >= SPLIT_ROW_FROM && inReply(at);
  const closeRows = (end: number) => {
    if (rowStart < 0) return;
    for (let a = rowStart; a < end;) {
      let b = a + 1;
      if (!splitRow(a)) while (b < end && b - a < rowPiece && !splitRow(b)) b++;
      cuts.push(b);
      a = b;
    }
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
    if (rowClass(ax, x[i]!) !== rowClass(ay, y[j]!)) return at;
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
 * of the plan's piece, evaluated on its own, keeps the piece's class, and (2) the memory cut short there still
 * reads as the class it was computed in (see resumeAt).
 */
export function reusableByRows(memory: {tokens: readonly number[]; cuts: readonly number[]}, prompt: readonly number[], plan: readonly number[]): Reuse {
  const common = commonPrefix(memory.tokens, prompt);
  const limit = Math.min(common, exactLength(memory), prompt.length - 1);
  let at = firstClassDifference(memory.cuts, plan, Math.max(0, limit));
  for (;;) {
    const before = at;
    const planned = pieceAt(plan, at);
    if (planned && at > planned[0] && rowClass(at, planned[1]) !== rowClass(planned[0], planned[1])) at = keepClass(planned, "end");
    const held = pieceAt(memory.cuts, at);
    if (held && at > held[0] && rowClass(held[0], at) !== rowClass(held[0], held[1])) at = keepClass(held, "start");
    if (at === before) break;
  }
  return {length: Math.max(0, at), common};
}

/**
 * Where to cut a piece [a, b) (tiled or row) so that the part that stays, the rest ("end", evaluated on its own)
 * or the beginning ("start", read back from a memory cut short), keeps the piece's class: a tiled part needs
 * TILED_ROWS rows; a row part past SPLIT_ROW_FROM needs two (one would read as split). Moves only backwards.
 */
function keepClass([a, b]: [number, number], part: "end" | "start"): number {
  if (part === "start") return a;
  return rowClass(a, b) === "tiled" ? b - TILED_ROWS : b - 2;
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
