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

/** The engine's detokenizer as the pipeline uses it. */
export type EngineDetokenize = (tokens: readonly number[], opts: {special: boolean; context?: readonly number[]}) => string;

/**
 * A reply's text: special tokens are left out (an end-of-turn marker is not text), except the ones a model family
 * writes its syntax with (gpt-oss channels, Mistral's [TOOL_CALLS], DeepSeek's call markers): the reply parser
 * must see those, as llama.cpp's server keeps them for its own parsers.
 */
export function replyDetokenizer(detokenize: EngineDetokenize, visible: ReadonlySet<number>): Detokenize {
  if (visible.size === 0) return (tokens, context) => detokenize(tokens, {special: false, context});
  return (tokens, context) => {
    if (!tokens.some((t) => visible.has(t))) return detokenize(tokens, {special: false, context});
    let text = "";
    let run: number[] = [];
    let before = [...context];
    const flush = () => {
      if (run.length === 0) return;
      text += detokenize(run, {special: false, context: before});
      before = [...before, ...run];
      run = [];
    };
    for (const t of tokens) {
      if (!visible.has(t)) {
        run.push(t);
        continue;
      }
      flush();
      text += detokenize([t], {special: true, context: before});
      before = [...before, t];
    }
    flush();
    return text;
  };
}

/** The control tokens among `texts` (each text one token that a plain detokenization would drop). */
export function visibleSpecialTokens(texts: readonly string[], tokenize: (text: string) => number[], detokenize: EngineDetokenize): Set<number> {
  const out = new Set<number>();
  for (const text of texts) {
    const ids = tokenize(text);
    if (ids.length !== 1) continue;
    const id = ids[0]!;
    if (detokenize([id], {special: false}) === "" && detokenize([id], {special: true}) === text) out.add(id);
  }
  return out;
}
