// The reranker (`nx3-reranker-0.6b`, `nx3-reranker-4b`), in Qwen3-Reranker's format: a fixed system line,
// the user turn `<Instruct>: …\n<Query>: …\n<Document>: …`, and the assistant turn opened with an empty
// think block; the score is P(yes) / (P(yes) + P(no)) at the first answer position.
//
// Everything before the document (system, instruction, query) is the same for every document of a request,
// so the prompt is cut where the document starts: each document after the first reuses that prefix's KV
// exactly (scorer reuse + boundary), and a batch (lm/batches.ts) scores its documents in one executor pass.

import {planPasses} from "../lm/batches.ts";
import {CHATML, labelSet, PromptBuilder, readingOf, type LabelSet, type Tokenizer} from "../lm/labels.ts";
import {loadChatMlScorer} from "../lm/load.ts";
import {LmScorer} from "../lm/scorer.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";

export const RERANK_LIMITS = {
  /** Query plus document plus template, in tokens. */
  maxPairTokens: 4096,
} as const;

export const DEFAULT_RERANK_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query";

const SYSTEM = "Judge whether the Document meets the requirements based on the Query and the Instruct provided. " +
  "Note that the answer can only be \"yes\" or \"no\".";

export interface RerankPrompt {
  tokens: number[];
  /** Where the document starts (the shared prefix ends). */
  prefixEnd: number;
}

export interface RerankScore {
  relevance: number;
  promptTokens: number;
  reused: number;
}

export class RerankerRunner implements SideRunner, Tokenizer {
  readonly kind = "reranker" as const;
  private readonly answers: LabelSet;

  private constructor(readonly id: string, readonly path: string, private readonly scorer: LmScorer, private readonly ctx: SideModelContext) {
    this.answers = labelSet(scorer, ["yes", "no"]);
  }

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<RerankerRunner> {
    const {path, scorer} = await loadChatMlScorer(def, ctx, RERANK_LIMITS.maxPairTokens + 1);
    return new RerankerRunner(def.id, path, scorer, ctx);
  }

  tokenize(text: string, special: boolean): number[] {
    return this.scorer.tokenize(text, special);
  }

  get maxPairTokens(): number {
    return Math.min(RERANK_LIMITS.maxPairTokens, this.scorer.contextSize - 1);
  }

  /** The prompts of a request: one per document, all sharing the prefix up to `prefixEnd`. */
  prompts(query: string, documents: readonly string[], instruction = DEFAULT_RERANK_INSTRUCTION): RerankPrompt[] {
    const prefix = new PromptBuilder(this)
      .template(CHATML.open("system") + SYSTEM + CHATML.close + CHATML.open("user") + "<Instruct>: ")
      .client(instruction)
      .template("\n<Query>: ")
      .client(query)
      .template("\n<Document>: ");
    const prefixEnd = prefix.length;
    const suffix = this.tokenize(CHATML.close + CHATML.open("assistant") + CHATML.emptyThink, true);
    return documents.map((doc) => ({tokens: [...prefix.tokens, ...this.tokenize(doc, false), ...suffix], prefixEnd}));
  }

  /** Scores every prompt; `batching` is SVC_NPU_EMB_BATCH. Results in the prompts' order. */
  async score(prompts: readonly RerankPrompt[], opts: {batching: boolean; signal?: AbortSignal}): Promise<RerankScore[]> {
    const out: RerankScore[] = new Array(prompts.length);
    // The batch rule counts each input's own tokens: the document's part of the pair.
    const passes = planPasses(prompts.map((p) => p.tokens.length - p.prefixEnd), opts.batching);
    for (const group of passes) {
      await this.ctx.executor.run(async () => {
        for (const i of group) {
          const p = prompts[i]!;
          // Reuse is exact (the prefix is a cut of every plan), so a document's score never depends on its neighbours.
          const r = await this.scorer.scoreNow(p.tokens, this.answers.tokens, {reuse: true, boundaries: [p.prefixEnd], signal: opts.signal});
          out[i] = {relevance: readingOf(r.logprobs).probabilities[0]!, promptTokens: p.tokens.length, reused: r.reused};
        }
      }, opts.signal);
    }
    return out;
  }

  describe(): Record<string, unknown> {
    return {max_pair_tokens: this.maxPairTokens, format: "qwen3-reranker"};
  }

  async close(): Promise<void> {
    await this.scorer.close();
  }
}

export const createRerankerRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> => RerankerRunner.load(def, ctx);
