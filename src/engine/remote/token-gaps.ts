// Token ids that a streamed /completion did not send. llama-server streams a token only once the text so far
// is whole UTF-8: a token that ends inside a character (a byte token, half of an emoji) is held back, and the
// next chunk carries the held text in `content` but only its own id in `tokens`. `tokens_predicted` says how
// many were held; their bytes are `content` minus the last token's. This finds `count` vocabulary tokens whose
// bytes are exactly those, so the reply's token record (usage, continuation prompts, routing) stays whole.

export class TokenByteIndex {
  private index: Map<string, number> | null = null;
  private longest = 0;

  constructor(private readonly vocabSize: number, private readonly bytesOf: (token: number) => Uint8Array,
    private readonly isSpecial: (token: number) => boolean) {}

  /** Byte strings as latin1 keys; built on first use (a vocabulary of 150k tokens takes tens of ms). */
  private map(): Map<string, number> {
    if (this.index) return this.index;
    const index = new Map<string, number>();
    for (let t = 0; t < this.vocabSize; t++) {
      if (this.isSpecial(t)) continue;
      const bytes = this.bytesOf(t);
      if (bytes.length === 0) continue;
      const key = Buffer.from(bytes).toString("latin1");
      // The first id wins: vocabularies with duplicate byte strings keep the lower (usually the byte token).
      if (!index.has(key)) index.set(key, t);
      if (bytes.length > this.longest) this.longest = bytes.length;
    }
    this.index = index;
    return index;
  }

  /** `count` tokens whose bytes concatenate to `bytes`, longest pieces first; null when there is no such split. */
  split(bytes: Uint8Array, count: number): number[] | null {
    const map = this.map();
    const key = Buffer.from(bytes).toString("latin1");
    const walk = (at: number, left: number): number[] | null => {
      if (left === 0) return at === key.length ? [] : null;
      const rest = key.length - at;
      if (rest < left) return null;
      for (let len = Math.min(this.longest, rest - (left - 1)); len >= 1; len--) {
        const id = map.get(key.slice(at, at + len));
        if (id === undefined) continue;
        const tail = walk(at + len, left - 1);
        if (tail) return [id, ...tail];
      }
      return null;
    };
    return walk(0, count);
  }

  /** The fewest tokens whose bytes concatenate to `bytes` (greedy longest match); null when a byte has no token. */
  cover(bytes: Uint8Array): number[] | null {
    for (let n = 1; n <= bytes.length; n++) {
      const found = this.split(bytes, n);
      if (found) return found;
    }
    return bytes.length === 0 ? [] : null;
  }
}

/** Bytes of `content` before the last token's own bytes: what the held-back tokens wrote. Null when they do not line up. */
export function heldBackBytes(content: string, lastTokenBytes: Uint8Array): Uint8Array | null {
  const all = new TextEncoder().encode(content);
  if (all.length < lastTokenBytes.length) return null;
  const tailStart = all.length - lastTokenBytes.length;
  for (let i = 0; i < lastTokenBytes.length; i++) if (all[tailStart + i] !== lastTokenBytes[i]) return null;
  return all.subarray(0, tailStart);
}
