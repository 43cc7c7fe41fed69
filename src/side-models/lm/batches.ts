// The spec's batching rule for several short inputs of one request (rerank documents, moderation inputs):
// a batch holds up to 8 inputs of up to 512 tokens; batching is used from 6 inputs of up to 128 tokens or
// from 5 inputs of up to 512; smaller groups and leftovers run one pass each. A batch is one executor pass;
// each input in it is scored exactly as it would be alone (the scorer's reuse is exact), so only the number
// of passes changes.

export const BATCH_MAX_INPUTS = 8;
export const BATCH_MAX_TOKENS = 512;

/**
 * Groups input indexes into passes. `lengths[i]` is input i's token count; `enabled` is SVC_NPU_EMB_BATCH.
 * Inputs keep their order inside a group; groups come in order of their first input.
 */
export function planPasses(lengths: readonly number[], enabled: boolean): number[][] {
  const all = lengths.map((_, i) => i);
  if (!enabled) return all.map((i) => [i]);
  const short = all.filter((i) => lengths[i]! <= 128);
  const medium = all.filter((i) => lengths[i]! > 128 && lengths[i]! <= BATCH_MAX_TOKENS);
  const passes: number[][] = [];
  const singles: number[] = all.filter((i) => lengths[i]! > BATCH_MAX_TOKENS);
  // Short inputs batch from 6 of them; what is left joins the medium ones, which batch from 5.
  let rest = takeBatches(short, 6, passes);
  rest = takeBatches([...rest, ...medium].sort((a, b) => a - b), 5, passes);
  singles.push(...rest);
  for (const i of singles) passes.push([i]);
  return passes.sort((a, b) => a[0]! - b[0]!);
}

/** Cuts batches of up to 8 while at least `from` inputs remain; returns the leftovers. */
function takeBatches(items: number[], from: number, out: number[][]): number[] {
  let i = 0;
  while (items.length - i >= from) {
    const n = Math.min(BATCH_MAX_INPUTS, items.length - i);
    out.push(items.slice(i, i + n));
    i += n;
  }
  return items.slice(i);
}
