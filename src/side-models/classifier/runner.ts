// Own sequence-classifier fine-tunes (kind `classifier`, POST /classify): a BertForSequenceClassification
// folder converted with RANK pooling, so llama.cpp runs the pooler (dense + tanh on the [CLS] state) and
// the classification layer itself and hands back one raw score per label.

import type {Token} from "../../engine/index.ts";
import type {SideExecutor} from "../executor.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {planPasses} from "../embedding/batch-plan.ts";
import {BertModel} from "../embedding/bert-model.ts";

export type Activation = "softmax" | "sigmoid";

export class ClassifierRunner implements SideRunner {
  readonly kind = "classifier" as const;

  constructor(readonly id: string, readonly model: BertModel, private readonly executor: SideExecutor) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<ClassifierRunner> {
    const model = await BertModel.load(def.id, def.source, ctx);
    if (model.info.kind !== "classifier") {
      await model.close();
      throw new Error(`SVC_NPU_MODELS: ${def.source} holds an embedder, not a sequence classifier`);
    }
    return new ClassifierRunner(def.id, model, ctx.executor);
  }

  get path(): string {
    return this.model.path;
  }

  get labels(): string[] {
    return this.model.info.config.labels ?? [];
  }

  /** The checkpoint's own activation: sigmoid per label for multi-label training, else softmax over labels. */
  get activation(): Activation {
    return this.model.info.config.problemType === "multi_label_classification" ? "sigmoid" : "softmax";
  }

  get inputLimit(): number {
    return this.model.inputLimit;
  }

  get vocabularySize(): number {
    return this.model.vocabularySize;
  }

  tokenize(text: string): Token[] {
    return this.model.tokenize(text);
  }

  withSpecials(tokens: readonly Token[]): Token[] {
    return this.model.withSpecials(tokens);
  }

  /** Raw scores (logits), one array per input, in input order. */
  async score(inputs: readonly Token[][], opts: {batch: boolean; signal?: AbortSignal}): Promise<number[][]> {
    const out: number[][] = new Array(inputs.length);
    for (const pass of planPasses(inputs.map((t) => t.length), opts.batch)) {
      await this.executor.run(async () => {
        for (const i of pass) out[i] = Array.from(await this.model.evaluate(inputs[i]!));
      }, opts.signal);
    }
    return out;
  }

  describe(): Record<string, unknown> {
    return {labels: this.labels, activation: this.activation, input_tokens: this.inputLimit, checkpoint: this.model.checkpoint,
      conversion: this.model.conversion};
  }

  async close(): Promise<void> {
    await this.model.close();
  }
}

/** Softmax over the scores (stable: shifted by the maximum), or a sigmoid per score. */
export function activate(scores: readonly number[], activation: Activation): number[] {
  if (activation === "sigmoid") return scores.map((s) => 1 / (1 + Math.exp(-s)));
  const max = Math.max(...scores);
  const exps = scores.map((s) => Math.exp(s - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

export const createClassifierRunner = (def: SideModelDef, ctx: SideModelContext) => ClassifierRunner.load(def, ctx);
