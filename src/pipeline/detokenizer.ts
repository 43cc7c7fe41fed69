// Tokens to text, incrementally. A token may carry only part of a UTF-8 character; its text then ends
// in U+FFFD until the rest arrives, so such text is held (up to a few tokens) instead of streamed broken.
// The previous tokens are passed as context so tokenizers that mark word starts get spacing right.

export interface Detokenize {
  (tokens: readonly number[], context: readonly number[]): string;
}

const MAX_HELD_TOKENS = 4;
const CONTEXT_TOKENS = 8;

export class IncrementalDetokenizer {
  private readonly done: number[] = [];
  private pending: number[] = [];

  constructor(private readonly detokenize: Detokenize) {}

  push(token: number): string {
    this.pending.push(token);
    const text = this.detokenize(this.pending, this.done.slice(-CONTEXT_TOKENS));
    if (text.endsWith("\uFFFD") && this.pending.length < MAX_HELD_TOKENS) return "";
    this.commit();
    return text;
  }

  flush(): string {
    if (this.pending.length === 0) return "";
    const text = this.detokenize(this.pending, this.done.slice(-CONTEXT_TOKENS));
    this.commit();
    return text;
  }

  private commit(): void {
    this.done.push(...this.pending);
    if (this.done.length > 4 * CONTEXT_TOKENS) this.done.splice(0, this.done.length - CONTEXT_TOKENS);
    this.pending = [];
  }
}
