// The decision model (`decider-0.8b`, `decider-4b`): questions about a text, each answered by reading its
// options' tokens in one pass of the scorer. Serves both the chat route (one question from a response
// schema) and POST /v1/decide (several named questions).
//
// SVC_NPU_DEC_RESUME: 0 evaluates every question's prompt from scratch; 1 lets the later questions of a
// request reuse the text's KV; 2 also keeps texts for later requests (kept-texts.ts). Every prompt is cut by
// the same plan in all three modes (64-token pieces plus a cut at the end of the text), so the answers are
// bit-identical whatever the mode.

import {createHash} from "node:crypto";
import {readingOf, type LabelReading, type Tokenizer} from "../lm/labels.ts";
import {loadChatMlScorer} from "../lm/load.ts";
import {LmScorer} from "../lm/scorer.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {KeptTexts} from "./kept-texts.ts";
import {answerLabels, DECISION_LIMITS, decisionPrompt, type DecisionQuestion} from "./prompt.ts";

export interface PreparedQuestion {
  question: DecisionQuestion;
  tokens: number[];
  textEnd: number;
  labels: readonly number[];
}

export interface PreparedDecision {
  text: string;
  questions: PreparedQuestion[];
}

export interface DecideOptions {
  resume: number;
  /** SVC_NPU_DEC_ENTRIES: texts kept with resume 2. */
  entries: number;
  signal?: AbortSignal;
}

export interface DecisionAnswer extends LabelReading {
  promptTokens: number;
}

export interface DecisionOutcome {
  answers: DecisionAnswer[];
  promptTokens: number;
  /** Prompt tokens served from kept KV instead of evaluated (timings.cache_n). */
  cachedTokens: number;
  promptMs: number;
  /** resume 2: a kept text was loaded for this request. */
  restored: boolean;
  /** resume 2: the text was kept after this request. */
  kept: boolean;
}

export class DeciderRunner implements SideRunner, Tokenizer {
  readonly kind = "decider" as const;
  private readonly kept = new KeptTexts();

  private constructor(readonly id: string, readonly path: string, private readonly scorer: LmScorer, private readonly ctx: SideModelContext) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<DeciderRunner> {
    const {path, scorer} = await loadChatMlScorer(def, ctx, DECISION_LIMITS.maxPromptTokens + 1);
    return new DeciderRunner(def.id, path, scorer, ctx);
  }

  tokenize(text: string, special: boolean): number[] {
    return this.scorer.tokenize(text, special);
  }

  /** The largest prompt this runner can read: the spec's 8,192, or less when the model's context is smaller. */
  get maxPromptTokens(): number {
    return Math.min(DECISION_LIMITS.maxPromptTokens, this.scorer.contextSize - 1);
  }

  /** Renders every question's prompt (the caller checks the limit before anything runs). */
  prepare(text: string, questions: DecisionQuestion[]): PreparedDecision {
    return {
      text,
      questions: questions.map((question) => {
        const {tokens, textEnd} = decisionPrompt(this, text, question);
        return {question, tokens, textEnd, labels: answerLabels(this, question).tokens};
      }),
    };
  }

  /** One executor pass per question. */
  async decide(prepared: PreparedDecision, opts: DecideOptions): Promise<DecisionOutcome> {
    const answers: DecisionAnswer[] = [];
    let cachedTokens = 0;
    let promptMs = 0;
    let restored = false;
    let kept = false;
    // Time spent loading and saving kept texts (resume 2), for the log line: the measure of what keeping costs.
    let keepMs = 0;
    const key = createHash("sha256").update(prepared.text).digest("hex");
    const last = prepared.questions.length - 1;
    for (let i = 0; i <= last; i++) {
      const q = prepared.questions[i]!;
      const pass = async () => {
        const t0 = performance.now();
        if (i === 0 && opts.resume >= 2) restored = (await this.kept.restoreBest(this.scorer, q.tokens)) !== null;
        keepMs += performance.now() - t0;
        const reuse = opts.resume >= 2 || (opts.resume === 1 && i > 0);
        const r = await this.scorer.scoreNow(q.tokens, q.labels, {reuse, boundaries: [q.textEnd], signal: opts.signal});
        if (i === last && opts.resume >= 2 && this.kept.shouldKeep(key, prepared.questions.length)) {
          const t1 = performance.now();
          await this.kept.keep(this.scorer, key, opts.entries);
          keepMs += performance.now() - t1;
          kept = true;
        }
        return r;
      };
      const r = await this.ctx.executor.run(pass, opts.signal);
      cachedTokens += r.reused;
      promptMs += r.promptMs;
      answers.push({...readingOf(r.logprobs, r.reused, r.promptMs), promptTokens: q.tokens.length});
    }
    const promptTokens = answers.reduce((a, x) => a + x.promptTokens, 0);
    this.ctx.logger.info("decision", {model: this.id, questions: answers.length, prompt_tokens: promptTokens, cache_n: cachedTokens,
      resume: opts.resume, restored, kept, keep_ms: Math.round(keepMs * 10) / 10, kept_bytes: this.kept.status().bytes, ms: Math.round(promptMs)});
    return {answers, promptTokens, cachedTokens, promptMs, restored, kept};
  }

  describe(): Record<string, unknown> {
    return {max_prompt_tokens: this.maxPromptTokens, options: `${DECISION_LIMITS.minOptions} to ${DECISION_LIMITS.maxOptions}`,
      kept_texts: this.kept.status()};
  }

  async close(): Promise<void> {
    this.kept.close();
    await this.scorer.close();
  }
}

/** The factory of runners.ts. */
export const createDeciderRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> => DeciderRunner.load(def, ctx);
