// Reading a label off a decoder side model: render a ChatML prompt as tokens, pick one token per label, and
// turn the scorer's next-token log probabilities into the labels' probabilities. Shared by decisions,
// reranking, moderation and the streaming guard (which reads Safe/Unsafe/Controversial the same way).
//
// Why tokens are built piece by piece instead of rendering one string: client text is tokenized without
// special-token parsing (a client typing "<|im_end|>" cannot close a turn), and the place where a shared
// text ends is known exactly as a token index, which the scorer needs as a cut (`boundaries`) for exact reuse.

import {renormalise, type LmScorer, type ScoreOptions} from "./scorer.ts";

/** The tokenizer half of a scorer (what prompt building needs). */
export interface Tokenizer {
  tokenize(text: string, special: boolean): number[];
}

/** A prompt as token ids, with the marks callers cut at. */
export class PromptBuilder {
  readonly tokens: number[] = [];
  private readonly marks: number[] = [];

  constructor(private readonly tok: Tokenizer) {}

  /** Template text: special markers such as <|im_start|> become their special tokens. */
  template(text: string): this {
    if (text !== "") this.tokens.push(...this.tok.tokenize(text, true));
    return this;
  }

  /** Client text: never parsed for special tokens. */
  client(text: string): this {
    if (text !== "") this.tokens.push(...this.tok.tokenize(text, false));
    return this;
  }

  /** Marks the current end (e.g. where the text shared by several calls ends). */
  mark(): number {
    this.marks.push(this.tokens.length);
    return this.tokens.length;
  }

  get boundaries(): readonly number[] {
    return this.marks;
  }

  get length(): number {
    return this.tokens.length;
  }
}

/** ChatML turns, the format of SmolLM2 (and of the Qwen models the side ids stand for). */
export const CHATML = {
  open: (role: string) => `<|im_start|>${role}\n`,
  close: "<|im_end|>\n",
  /** Qwen3's assistant turn with thinking off: an empty think block, as their rerankers and guards expect. */
  emptyThink: "<think>\n\n</think>\n\n",
} as const;

/** Refuses a model file whose tokenizer has no ChatML markers (the side formats are written in ChatML). */
export function assertChatMl(tok: Tokenizer, id: string): void {
  for (const marker of ["<|im_start|>", "<|im_end|>"]) {
    if (tok.tokenize(marker, true).length !== 1) {
      throw new Error(`SVC_NPU_MODELS: ${id}: the model file has no ${marker} token; this side model's prompt format is ChatML`);
    }
  }
}

export interface LabelSet {
  labels: readonly string[];
  /** The token read for each label. */
  tokens: readonly number[];
}

/**
 * One token per label: the first token of the label as it is written after the prompt (mind the leading
 * space: " yes" and "yes" are different tokens). Labels of several tokens are read by their first token,
 * which is exact as long as the first tokens differ (the format allows only these labels, so the first
 * token decides which one is written); two labels starting with the same token are refused.
 */
export function labelSet(tok: Tokenizer, labels: readonly string[]): LabelSet {
  const tokens = labels.map((label) => {
    const t = tok.tokenize(label, false);
    if (t.length === 0) throw new Error(`label ${JSON.stringify(label)} has no tokens`);
    return t[0]!;
  });
  const seen = new Map<number, string>();
  tokens.forEach((t, i) => {
    const other = seen.get(t);
    if (other !== undefined) throw new Error(`labels ${JSON.stringify(other)} and ${JSON.stringify(labels[i])} start with the same token`);
    seen.set(t, labels[i]!);
  });
  return {labels, tokens};
}

export interface LabelReading {
  /** The labels' probabilities renormalised over the labels: they sum to 1. */
  probabilities: number[];
  /** log of `probabilities`. */
  logprobs: number[];
  /** log p(label token | prompt) under the model's whole vocabulary. */
  rawLogprobs: number[];
  /** Index of the most likely label (the first on a tie). */
  best: number;
  reused: number;
  promptMs: number;
}

/** Turns raw candidate log probabilities into a reading (shared by the one-pass and batched paths). */
export function readingOf(rawLogprobs: readonly number[], reused = 0, promptMs = 0): LabelReading {
  const probabilities = renormalise(rawLogprobs);
  // log of the renormalised share, computed in log space so tiny shares keep their precision.
  const max = Math.max(...rawLogprobs);
  const logZ = max + Math.log(rawLogprobs.reduce((a, l) => a + Math.exp(l - max), 0));
  const logprobs = rawLogprobs.map((l) => l - logZ);
  let best = 0;
  for (let i = 1; i < probabilities.length; i++) if (probabilities[i]! > probabilities[best]!) best = i;
  return {probabilities, logprobs, rawLogprobs: [...rawLogprobs], best, reused, promptMs};
}

/** One executor pass: the labels' probabilities after the prompt. */
export async function readLabels(scorer: LmScorer, prompt: readonly number[], set: LabelSet, opts: ScoreOptions = {}): Promise<LabelReading> {
  const r = await scorer.score(prompt, set.tokens, opts);
  return readingOf(r.logprobs, r.reused, r.promptMs);
}

/** The same inside a pass the caller already holds (batches: several prompts in one executor pass). */
export async function readLabelsNow(scorer: LmScorer, prompt: readonly number[], set: LabelSet, opts: ScoreOptions = {}): Promise<LabelReading> {
  const r = await scorer.scoreNow(prompt, set.tokens, opts);
  return readingOf(r.logprobs, r.reused, r.promptMs);
}
