// The spec's batching rule for side-model inputs ("Batching and queue"): a batch holds up to 8 inputs of up
// to 512 tokens each; batching is used from 6 inputs of up to 128 tokens, or from 5 inputs when some are
// longer (up to 512); smaller groups and leftovers run one pass each. Pure, so it is unit-tested exactly.

export const BATCH_RULES = {
  maxInputs: 8,
  maxTokens: 512,
  shortTokens: 128,
  /** Fewest inputs that make a batch when every input is short (≤ shortTokens). */
  minShort: 6,
  /** Fewest inputs that make a batch when some input is longer (≤ maxTokens). */
  minLong: 5,
} as const;

/** One pass: the input indices it evaluates (a single index when it is not a batch). */
export type Pass = number[];

/**
 * Groups inputs (by their token counts) into passes. Inputs over maxTokens never batch. Batchable inputs
 * are taken in request order, up to 8 at a time; a group big enough for its lengths is one pass, and
 * the rest run alone. `enabled` false (SVC_NPU_EMB_BATCH=0) runs every input alone.
 */
export function planPasses(lengths: readonly number[], enabled: boolean, rules = BATCH_RULES): Pass[] {
  if (!enabled) return lengths.map((_, i) => [i]);
  const passes: Pass[] = [];
  const batchable = lengths.map((n, i) => ({n, i})).filter((x) => x.n <= rules.maxTokens);
  const alone = lengths.map((n, i) => ({n, i})).filter((x) => x.n > rules.maxTokens).map((x) => [x.i]);
  for (let at = 0; at < batchable.length; at += rules.maxInputs) {
    const group = batchable.slice(at, at + rules.maxInputs);
    const allShort = group.every((x) => x.n <= rules.shortTokens);
    const needed = allShort ? rules.minShort : rules.minLong;
    if (group.length >= needed) passes.push(group.map((x) => x.i));
    else for (const x of group) passes.push([x.i]);
  }
  return [...passes, ...alone].sort((a, b) => a[0]! - b[0]!);
}
