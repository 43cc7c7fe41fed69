// Prefix arithmetic on token sequences that the pipeline, the sessions and the side models share with the engine.
// Pure and engine-free: which stored KV may stand in for a prompt (row classes, cut plans) is the engine's rule
// and stays behind src/engine/index.ts.

/** How many leading tokens two sequences share. */
export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** The exact length of a memory: its last cut (KV past it, if any, is not reusable as evaluated). */
export function exactLength(memory: {cuts: readonly number[]}): number {
  return memory.cuts.length > 0 ? memory.cuts[memory.cuts.length - 1]! : 0;
}
