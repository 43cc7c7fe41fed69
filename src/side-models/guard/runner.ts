// The streaming guard (`nx3guard-stream-0.6b`, kind stream-guard): judges a user's message and a main-model
// reply as it grows, one verdict per side-executor pass, on the LmScorer (exact next-token log
// probabilities, exact KV reuse). Each watched reply leases a scorer context of its own for its whole life,
// so the reply read so far stays in that context's KV and each verdict evaluates only the reply's new
// tokens plus the short question after them. Contexts are made on first need and kept for the next reply.

import type {LlamaModel} from "../../engine/index.ts";
import {resolveModel} from "../../models/resolve.ts";
import {LmScorer} from "../lm/scorer.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {assertChatMl, labelSet, readingOf, type LabelSet} from "../lm/labels.ts";
import {GUARD_LIMITS} from "./limits.ts";
import {GUARD_PROMPT, REPLY_CATEGORIES, RISK_LABELS, USER_CATEGORIES, type PromptPiece, type Risk} from "./prompt.ts";
import type {GuardJudge, Verdict} from "./watch.ts";

interface PromptTokens {
  head: number[];
  userClose: number[];
  replyOpen: number[];
  userQuestion: number[];
  replyQuestion: number[];
  categoryLine: Record<Exclude<Risk, "Safe">, number[]>;
}

export class StreamGuardRunner implements SideRunner {
  readonly kind = "stream-guard" as const;
  private readonly idle: LmScorer[] = [];
  private contexts = 0;
  private watching = 0;
  private closed = false;

  private constructor(
    readonly id: string,
    readonly path: string,
    readonly format: string,
    private readonly model: LlamaModel,
    private readonly side: SideModelContext,
    readonly pieces: PromptTokens,
    /** Safe/Unsafe/Controversial, read as the token after "Safety:" (in RISK_LABELS order). */
    readonly labels: LabelSet,
    /** The categories, read as the token after "Categories:" (USER_CATEGORIES / REPLY_CATEGORIES order). */
    readonly userCategories: LabelSet,
    readonly replyCategories: LabelSet,
    /** Positions one verdict prompt may need at most (the window plus the guard's own text). */
    readonly contextSize: number,
  ) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<StreamGuardRunner> {
    const resolved = await resolveModel(def.source, {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress});
    const model = await ctx.loadModel(resolved.path);
    const tokenizer = {tokenize: (text: string, special: boolean) => model.tokenize(text, special) as number[]};
    assertChatMl(tokenizer, def.id);
    const tok = (p: PromptPiece) => model.tokenize(p.text, p.special) as number[];
    const pieces: PromptTokens = {
      head: tok(GUARD_PROMPT.head),
      userClose: tok(GUARD_PROMPT.userClose),
      replyOpen: tok(GUARD_PROMPT.replyOpen),
      userQuestion: tok(GUARD_PROMPT.userQuestion),
      replyQuestion: tok(GUARD_PROMPT.replyQuestion),
      categoryLine: {Unsafe: tok(GUARD_PROMPT.categoryLine("Unsafe")), Controversial: tok(GUARD_PROMPT.categoryLine("Controversial"))},
    };
    const what = `SVC_NPU_MODELS: ${def.id}`;
    // Written after "Safety:" / "Categories:" with a space; each is read by its first token (labelSet refuses
    // two that share one). SmolLM2: " Safe", " Un", " Controvers"; " Viol", " Sexual", " Self", ...
    const spaced = (words: readonly string[]) => words.map((w) => ` ${w}`);
    const labels = labelSet(tokenizer, spaced(RISK_LABELS));
    const userCategories = labelSet(tokenizer, spaced(USER_CATEGORIES));
    const replyCategories = labelSet(tokenizer, spaced(REPLY_CATEGORIES));
    const longest = pieces.head.length + pieces.userClose.length + pieces.replyOpen.length + GUARD_LIMITS.windowTokens +
      Math.max(pieces.userQuestion.length, pieces.replyQuestion.length) + Math.max(...Object.values(pieces.categoryLine).map((t) => t.length)) + 1;
    const contextSize = Math.ceil(longest / 256) * 256;
    if (contextSize > model.trainContextSize) {
      throw new Error(`${what}: the guard needs ${longest} positions but the model was trained for ${model.trainContextSize}`);
    }
    const runner = new StreamGuardRunner(def.id, resolved.path, def.format, model, ctx, pieces, labels, userCategories, replyCategories, contextSize);
    // One context at start, with the guard's system turn already read (every verdict reuses it): a failure
    // shows at start, and the first watched reply's final wait is spent on the reply, not on the policy.
    const first = runner.lease(1)!;
    try {
      await first.judgeUser([], new AbortController().signal);
    } finally {
      first.release();
    }
    return runner;
  }

  /**
   * A judge for one reply, or null when `limit` replies are already watched (SVC_GUARD_STREAMS). The lease
   * must be released when the reply is over.
   */
  lease(limit: number): GuardLease | null {
    if (this.closed || this.watching >= limit) return null;
    this.watching++;
    const scorer = this.idle.pop();
    return new GuardLease(this, scorer ? Promise.resolve(scorer) : this.newScorer());
  }

  /** Called by the lease once: the scorer goes back for the next reply. */
  giveBack(scorer: Promise<LmScorer>): void {
    this.watching--;
    void scorer.then((s) => {
      if (this.closed) void s.close();
      else this.idle.push(s);
    }, () => undefined);
  }

  get executor(): SideModelContext["executor"] {
    return this.side.executor;
  }

  tokenize(text: string): number[] {
    return this.model.tokenize(text, false) as number[];
  }

  detokenize(tokens: readonly number[]): string {
    return this.model.detokenize(tokens as never, false);
  }

  private async newScorer(): Promise<LmScorer> {
    const scorer = await LmScorer.create(this.model, this.side, this.contextSize);
    this.contexts++;
    return scorer;
  }

  describe(): Record<string, unknown> {
    return {
      format: this.format,
      context_size: this.contextSize,
      window_tokens: GUARD_LIMITS.windowTokens,
      user_tokens: GUARD_LIMITS.userTokens,
      chunk: {min: GUARD_LIMITS.chunkMin, max: GUARD_LIMITS.chunkMax, default: GUARD_LIMITS.chunkDefault},
      watching: this.watching,
      contexts: this.contexts,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.idle.splice(0)) await s.close();
  }
}

/** One watched reply's judge: its own scorer context, every verdict one executor pass. */
export class GuardLease implements GuardJudge {
  private released = false;

  constructor(private readonly runner: StreamGuardRunner, private readonly scorer: Promise<LmScorer>) {}

  tokenize(text: string): number[] {
    return this.runner.tokenize(text);
  }

  detokenize(tokens: readonly number[]): string {
    return this.runner.detokenize(tokens);
  }

  async judgeUser(user: readonly number[], signal: AbortSignal): Promise<Verdict> {
    const p = this.runner.pieces;
    const userEnd = p.head.length + user.length;
    const prompt = [...p.head, ...user, ...p.userClose, ...p.userQuestion];
    // Cut where the text shared with the reply verdicts ends, so they reuse the system turn and the message.
    return this.verdict(prompt, [p.head.length, userEnd, userEnd + p.userClose.length], this.runner.userCategories, USER_CATEGORIES, signal);
  }

  async judgeReply(user: readonly number[], reply: readonly number[], points: readonly number[], signal: AbortSignal): Promise<Verdict> {
    const p = this.runner.pieces;
    const userEnd = p.head.length + user.length;
    const replyStart = userEnd + p.userClose.length + p.replyOpen.length;
    const prompt = [...p.head, ...user, ...p.userClose, ...p.replyOpen, ...reply, ...p.replyQuestion];
    // Every earlier verdict's end is a cut of this plan too, so the KV read up to the last one is reused exactly.
    const boundaries = [p.head.length, userEnd, userEnd + p.userClose.length, replyStart, ...points.map((n) => replyStart + n), replyStart + reply.length];
    return this.verdict(prompt, boundaries, this.runner.replyCategories, REPLY_CATEGORIES, signal);
  }

  /** Label, then (when not Safe) the category after "Safety: <label>": one executor pass. */
  private async verdict(prompt: number[], boundaries: number[], categories: LabelSet, names: readonly string[], signal: AbortSignal): Promise<Verdict> {
    const scorer = await this.scorer;
    return this.runner.executor.run(async () => {
      const labelled = readingOf((await scorer.scoreNow(prompt, this.runner.labels.tokens, {reuse: true, boundaries})).logprobs);
      const risk = RISK_LABELS[labelled.best]!;
      const unsafe = labelled.probabilities[RISK_LABELS.indexOf("Unsafe")]!;
      const prob = labelled.probabilities[labelled.best]!;
      if (risk === "Safe") return {risk, prob, unsafe, category: null};
      const withLabel = [...prompt, ...this.runner.pieces.categoryLine[risk]];
      const cat = readingOf((await scorer.scoreNow(withLabel, categories.tokens, {reuse: true, boundaries: [...boundaries, prompt.length]})).logprobs);
      return {risk, prob, unsafe, category: names[cat.best]!};
    }, signal);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.runner.giveBack(this.scorer);
  }
}

/** The factory of runners.ts. */
export const createStreamGuardRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> => StreamGuardRunner.load(def, ctx);
