// What a region's KV still holds from its last request, and how much of a new prompt may reuse it without
// changing a single number. A position's KV depends on the tokens before it and on the shape of the
// evaluation that computed it; prompts are evaluated in pieces that end at absolute multiples of the piece
// size, so a prefix made of whole pieces of an earlier prompt is bit-identical to what a cold evaluation of
// the new prompt would compute. Tokens generated one at a time, and a last partial piece, are not: they are
// never reused. (The prompt-cache issue builds the full pool on top of this rule.)

export interface RegionMemory {
  /** The prompt of the region's last request. */
  tokens: number[];
  /** tokens[0, aligned) have their KV in the region, computed in whole aligned pieces. */
  aligned: number;
}

export function emptyMemory(): RegionMemory {
  return {tokens: [], aligned: 0};
}

/** Prompt tokens a region can skip: the common prefix within its aligned part, cut to whole pieces, leaving ≥ 1 token to evaluate. */
export function reusableLength(memory: RegionMemory, prompt: readonly number[], piece: number): number {
  const limit = Math.min(memory.aligned, prompt.length - 1);
  let k = 0;
  while (k < limit && memory.tokens[k] === prompt[k]) k++;
  return Math.floor(k / piece) * piece;
}

/** The free region holding the most reusable tokens; ties (and no reuse anywhere) go to the lowest id. */
export function bestRegion(free: readonly number[], memories: readonly RegionMemory[], prompt: readonly number[], piece: number): number {
  let best = free[0]!;
  let bestLength = -1;
  for (const id of free) {
    const n = reusableLength(memories[id]!, prompt, piece);
    if (n > bestLength) {
      best = id;
      bestLength = n;
    }
  }
  return best;
}
