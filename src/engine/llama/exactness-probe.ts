// Whether reuse may be matched by row class (kv/row-classes.ts) on this model, engine build and thread
// count, measured at load rather than assumed: the rule rests on kernel behaviour (which attention path a
// piece takes, whether a matrix product's rows are computed on their own) that other quantisations or builds
// may not share. Repacked Q4_0 weights, for instance, multiply rows in groups of four, so there a row's
// numbers depend on its neighbours and only matching piece cuts is exact.
//
// The probe evaluates the same tokens in one sequence in pairs of layouts that the rule says are equivalent
// and a piece-cut rule says are not (tiled pieces composed differently, also as large as the engine merges them;
// one-token steps against a short piece), and compares the sequence's saved KV state byte for byte.

import {createHash} from "node:crypto";
import {mkdir, mkdtemp, readFile, rename, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import type {LlamaContextSequence, Token} from "node-llama-cpp";
import {TILED_ROWS} from "../kv/row-classes.ts";

export interface ExactnessProbe {
  /** "rows" when the two layouts gave the same state bytes. */
  match: "rows" | "pieces";
  ms: number;
  /** Why "pieces", or null. */
  reason: string | null;
}

/**
 * Pairs of layouts the rule says are equivalent (piece sizes in order, each pair over the same tokens from position
 * 0). First, a tiled run of two pieces against one, then a run as one-token steps and small pieces against the same
 * rows in one piece of TILED_ROWS - 1 (so a tiling threshold other than TILED_ROWS, either way, shows as a
 * difference too). Second, TILED_ROWS pieces against one piece as large as the engine merges them (`mergedRows`,
 * kv/row-classes.ts mergedRowsFor): a pair of its own, so that it fits the region, and so that no one-token step
 * lies at or past SPLIT_ROW_FROM, where a lone row is a "split" row of its own (kv/row-classes.ts), which the rule
 * does not equate with any other.
 */
export function probePairs(mergedRows: number): (readonly [readonly number[], readonly number[]])[] {
  return [
    [[TILED_ROWS, TILED_ROWS, 1, 1, 1, 1, 3, TILED_ROWS - 5], [2 * TILED_ROWS, 3, TILED_ROWS - 1]],
    [Array<number>(mergedRows / TILED_ROWS).fill(TILED_ROWS), [mergedRows]],
  ];
}

/** Tokens the probe needs (the longest layout's). */
export function probeTokens(mergedRows: number): number {
  return Math.max(...probePairs(mergedRows).flat().map((layout) => layout.reduce((a, b) => a + b, 0)));
}

/**
 * Runs the probe in `seq` (emptied before and after). `tokens` must hold at least probeTokens(mergedRows) tokens;
 * the context's batch must take `mergedRows` rows at once. One-token pieces go through the engine's batching as
 * decode steps do.
 */
export async function probeExactness(seq: LlamaContextSequence, tokens: readonly number[], mergedRows: number): Promise<ExactnessProbe> {
  const started = performance.now();
  const needed = probeTokens(mergedRows);
  if (tokens.length < needed) throw new Error(`the exactness probe needs ${needed} tokens, got ${tokens.length}`);
  const dir = await mkdtemp(join(tmpdir(), "svc-probe-"));
  const state = async (layout: readonly number[]): Promise<Buffer> => {
    await seq.clearHistory();
    let at = 0;
    for (const size of layout) {
      await seq.evaluateWithoutGeneratingNewTokens(tokens.slice(at, at + size) as Token[]);
      at += size;
    }
    const path = join(dir, "state.bin");
    await seq.saveStateToFile(path);
    return readFile(path);
  };
  try {
    for (const [first, second] of probePairs(mergedRows)) {
      const a = await state(first);
      const b = await state(second);
      if (a.equals(b)) continue;
      return {match: "pieces", ms: performance.now() - started, reason: a.length !== b.length ? "the two layouts saved states of different sizes"
        : "a row's KV depended on how its piece was composed (kernels that work on groups of rows)"};
    }
    return {match: "rows", ms: performance.now() - started, reason: null};
  } finally {
    await seq.clearHistory();
    await rm(dir, {recursive: true, force: true});
  }
}

/**
 * The probe's verdict kept in `dir` under a name made from everything it depends on (`key`: the model, the
 * engine build, the KV layout, the threads), so later starts on the same files skip the probe. A file that
 * cannot be read or does not hold a verdict is ignored and probed again; a failed write only costs the next
 * start a probe.
 */
export async function cachedProbe(store: {dir: string; key: unknown} | null, mergedRows: number, run: () => Promise<ExactnessProbe>):
  Promise<ExactnessProbe & {cached: boolean}> {
  if (!store) return {...(await run()), cached: false};
  const hash = createHash("sha256").update(JSON.stringify({key: store.key, layouts: probePairs(mergedRows)})).digest("hex").slice(0, 32);
  const file = join(store.dir, `exactness-${hash}.json`);
  try {
    const held = JSON.parse(await readFile(file, "utf8")) as Partial<ExactnessProbe>;
    if ((held.match === "rows" || held.match === "pieces") && typeof held.ms === "number" && (held.reason === null || typeof held.reason === "string")) {
      return {match: held.match, ms: held.ms, reason: held.reason, cached: true};
    }
  } catch {
    // Not there yet, or unreadable: probe.
  }
  const probe = await run();
  try {
    await mkdir(store.dir, {recursive: true});
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify({match: probe.match, ms: probe.ms, reason: probe.reason}));
    await rename(tmp, file);
  } catch {
    // A read-only directory: the next start probes again.
  }
  return {...probe, cached: false};
}
