// The embedding side model (kind `embedding`): a BERT sentence embedder converted from its HF folder
// (all-MiniLM-L6-v2 by default, or an own fine-tune). Inputs are grouped into passes by the spec's batching
// rule; each pass is one executor pass.
//
// A batch pass evaluates its inputs one decode each, back to back. The engine library reads llama.cpp's
// pooled output of sequence 0 only (LlamaContext._ctx.getEmbedding), so several inputs cannot be read out
// of one multi-sequence decode; and on this CPU build a two-sequence decode does not even give sequence 0
// the bits it gets alone (measured: differences around 1e-4). Evaluating inside one pass keeps each result
// equal to what it is alone, bit for bit, and keeps a batch from being split by other requests' passes.

import type {Token} from "../../engine/index.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import type {SideExecutor} from "../executor.ts";
import {planPasses} from "./batch-plan.ts";
import {BertModel} from "./bert-model.ts";
import {MultimodalEmbeddingRunner} from "./multimodal-runner.ts";

/** The instruction-aware query form of the Qwen3-embedding family the spec's ids stand for. */
export const DEFAULT_QUERY_TASK = "Given a web search query, retrieve relevant passages that answer the query";

export function queryText(query: string, task = DEFAULT_QUERY_TASK): string {
  return `Instruct: ${task}\nQuery:${query}`;
}

export class EmbeddingRunner implements SideRunner {
  readonly kind = "embedding" as const;
  /** Passes run so far, and how many of them held several inputs (shown in /health). */
  private stats = {passes: 0, batched: 0};

  constructor(readonly id: string, readonly model: BertModel, private readonly executor: SideExecutor) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<EmbeddingRunner> {
    const model = await BertModel.load(def.id, def.source, ctx);
    if (model.info.kind !== "embedding") {
      await model.close();
      throw new Error(`SVC_NPU_MODELS: ${def.id} (${def.source}) is a sequence classifier, not an embedder; ` +
        "name its directory alone to serve it on POST /classify");
    }
    return new EmbeddingRunner(def.id, model, ctx.executor);
  }

  get path(): string {
    return this.model.path;
  }

  /** The native vector size (MiniLM: 384). */
  get dimensions(): number {
    return this.model.info.config.hiddenSize;
  }

  /** Tokens an input may hold, [CLS] and [SEP] included. */
  get inputLimit(): number {
    return this.model.inputLimit;
  }

  /** The input as the model reads it: [CLS] text [SEP]. */
  tokenize(text: string): Token[] {
    return this.model.withSpecials(this.model.tokenize(text));
  }

  /** Raw pooled vectors, in input order. `batch` false (SVC_NPU_EMB_BATCH=0) runs every input as its own pass. */
  async embed(inputs: readonly Token[][], opts: {batch: boolean; signal?: AbortSignal}): Promise<Float64Array[]> {
    const out: Float64Array[] = new Array(inputs.length);
    for (const pass of planPasses(inputs.map((t) => t.length), opts.batch)) {
      await this.executor.run(async () => {
        for (const i of pass) out[i] = await this.model.evaluate(inputs[i]!);
      }, opts.signal);
      this.stats.passes++;
      if (pass.length > 1) this.stats.batched++;
    }
    return out;
  }

  describe(): Record<string, unknown> {
    return {dimensions: this.dimensions, input_tokens: this.inputLimit, checkpoint: this.model.checkpoint, conversion: this.model.conversion,
      passes: this.stats.passes, batched_passes: this.stats.batched};
  }

  async close(): Promise<void> {
    await this.model.close();
  }
}

export const createEmbeddingRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SideRunner> =>
  def.format === "multimodal" ? MultimodalEmbeddingRunner.load(def, ctx) : EmbeddingRunner.load(def, ctx);
