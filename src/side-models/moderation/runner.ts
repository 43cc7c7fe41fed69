// The moderation model (`nx3guard-gen-0.6b`): Qwen3Guard-Gen's prompt, the label read at the "Safety:"
// position. Several inputs of one request share the prompt's long fixed head (policy and categories): it is
// a cut of every plan, so inputs after the first reuse its KV exactly, and a batch (lm/batches.ts) runs in
// one executor pass.

import {planPasses} from "../lm/batches.ts";
import {labelSet, readingOf, type LabelSet, type Tokenizer} from "../lm/labels.ts";
import {loadChatMlScorer} from "../lm/load.ts";
import {LmScorer} from "../lm/scorer.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {GUARD_LABEL_TEXTS, GUARD_LABELS, guardPrompt, type GuardLabel, type GuardTurn} from "./prompt.ts";

export const MODERATION_LIMITS = {
  /** The whole moderation prompt, template included, in tokens. */
  maxPromptTokens: 4096,
} as const;

export interface ModerationPrompt {
  tokens: number[];
  headEnd: number;
  /** Tokens of the judged text alone (what the batch rule counts). */
  inputTokens: number;
}

export interface ModerationVerdict {
  label: GuardLabel;
  /** Probabilities of Safe, Unsafe, Controversial, summing to 1. */
  scores: Record<GuardLabel, number>;
  promptTokens: number;
  reused: number;
}

export class ModerationRunner implements SideRunner, Tokenizer {
  readonly kind = "moderation" as const;
  private readonly labels: LabelSet;

  private constructor(readonly id: string, readonly path: string, private readonly scorer: LmScorer, private readonly ctx: SideModelContext) {
    this.labels = labelSet(scorer, GUARD_LABEL_TEXTS);
  }

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<ModerationRunner> {
    const {path, scorer} = await loadChatMlScorer(def, ctx, MODERATION_LIMITS.maxPromptTokens + 1);
    return new ModerationRunner(def.id, path, scorer, ctx);
  }

  tokenize(text: string, special: boolean): number[] {
    return this.scorer.tokenize(text, special);
  }

  get maxPromptTokens(): number {
    return Math.min(MODERATION_LIMITS.maxPromptTokens, this.scorer.contextSize - 1);
  }

  prompt(conversation: readonly GuardTurn[]): ModerationPrompt {
    const {tokens, headEnd} = guardPrompt(this, conversation);
    const judged = conversation[conversation.length - 1]!.content;
    return {tokens, headEnd, inputTokens: this.tokenize(judged, false).length};
  }

  /** One verdict per prompt, in order; `batching` is SVC_NPU_EMB_BATCH. */
  async judge(prompts: readonly ModerationPrompt[], opts: {batching: boolean; signal?: AbortSignal}): Promise<ModerationVerdict[]> {
    const out: ModerationVerdict[] = new Array(prompts.length);
    for (const group of planPasses(prompts.map((p) => p.inputTokens), opts.batching)) {
      await this.ctx.executor.run(async () => {
        for (const i of group) {
          const p = prompts[i]!;
          const r = await this.scorer.scoreNow(p.tokens, this.labels.tokens, {reuse: true, boundaries: [p.headEnd], signal: opts.signal});
          const reading = readingOf(r.logprobs);
          out[i] = {
            label: GUARD_LABELS[reading.best]!,
            scores: {Safe: reading.probabilities[0]!, Unsafe: reading.probabilities[1]!, Controversial: reading.probabilities[2]!},
            promptTokens: p.tokens.length,
            reused: r.reused,
          };
        }
      }, opts.signal);
    }
    return out;
  }

  describe(): Record<string, unknown> {
    return {max_prompt_tokens: this.maxPromptTokens, format: "qwen3guard-gen", labels: GUARD_LABELS};
  }

  async close(): Promise<void> {
    await this.scorer.close();
  }
}

export const createModerationRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> => ModerationRunner.load(def, ctx);
