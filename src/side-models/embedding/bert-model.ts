// A converted BERT checkpoint loaded for the side models (the embedder and own classifier fine-tunes):
// resolve the HF folder, convert it to GGUF (or reuse the kept conversion), load it, and evaluate token
// lists one decode each, reading the pooled vector (MEAN/CLS) or the class scores (RANK pooling runs the
// BERT pooler and classification head natively).

import {join} from "node:path";
import {createEmbeddingsContext, pooledEmbedding, type LlamaContext, type LlamaContextSequence, type Token} from "../../engine/index.ts";
import {ensureConverted, type CheckpointInfo, type EnsureResult} from "../../models/hf-convert/convert.ts";
import {resolveModelFolder} from "../../models/hf-convert/fetch-folder.ts";
import type {SideModelContext} from "../side-models.ts";

/** The spec's limit for "other NPU inputs" (embedding text, rerank pair, ...), template included. */
export const SPEC_INPUT_TOKENS = 4096;

/** The kept GGUF's name inside a user's checkpoint directory (own fine-tunes, `id=/path`). */
export const CONVERTED_NAME = "svc-converted.gguf";

/**
 * One thread: these passes run beside the main model's decodes on the same cores, and llama.cpp's threads
 * spin at a barrier after every op, so a 2-thread decode of a 22M-parameter model collapses when another
 * process holds a core (measured on the 2-core box under load: 15 ms per short input with 1 thread,
 * 900 ms with 2). A model this small gains little from a second thread even when the box is idle.
 */
const BERT_THREADS = 1;

export class BertModel {
  private constructor(
    readonly path: string,
    readonly checkpoint: string,
    readonly info: CheckpointInfo,
    readonly conversion: EnsureResult["outcome"],
    private readonly context: LlamaContext,
    private readonly sequence: LlamaContextSequence,
    private readonly cleanup: () => Promise<void>,
  ) {}

  static async load(id: string, source: string, ctx: SideModelContext): Promise<BertModel> {
    const folder = await resolveModelFolder(source, {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress});
    // A user's directory keeps its conversion inside; our cached download keeps it beside the folder.
    const target = folder.kind === "path" ? join(folder.dir, CONVERTED_NAME) : `${folder.dir}.gguf`;
    const converted = await ensureConverted(folder.dir, {name: id, target, logger: ctx.logger, progress: ctx.progress});
    try {
      const model = await ctx.loadModel(converted.path);
      // BERT reads a whole input in one ubatch, so the batch is the context: the model's trained positions.
      const positions = model.trainContextSize;
      const context = await createEmbeddingsContext(model, {contextSize: positions, batchSize: positions, threads: BERT_THREADS});
      return new BertModel(converted.path, folder.dir, converted.info, converted.outcome, context, context.getSequence(), converted.cleanup);
    } catch (e) {
      await converted.cleanup();
      throw e;
    }
  }

  /** Positions the model can read: its trained context, the real limit under the spec's 4,096. */
  get positions(): number {
    return this.context.contextSize;
  }

  get inputLimit(): number {
    return Math.min(SPEC_INPUT_TOKENS, this.positions);
  }

  get clsToken(): Token | null {
    return this.context.model.tokens.bos;
  }

  get sepToken(): Token | null {
    return this.context.model.tokens.sep;
  }

  get vocabularySize(): number {
    return this.info.config.vocabSize;
  }

  /** The text's WordPiece tokens, without [CLS]/[SEP]. */
  tokenize(text: string): Token[] {
    return this.context.model.tokenize(text);
  }

  /** [CLS] tokens [SEP], as the checkpoint's tokenizer wraps a single sequence. */
  withSpecials(tokens: readonly Token[]): Token[] {
    return [...(this.clsToken !== null ? [this.clsToken] : []), ...tokens, ...(this.sepToken !== null ? [this.sepToken] : [])];
  }

  /**
   * One decode of exactly `tokens` on a fresh sequence; the pooled vector (or class scores). The caller
   * runs this inside an executor pass and has checked the length against inputLimit.
   */
  async evaluate(tokens: readonly Token[]): Promise<Float64Array> {
    if (tokens.length === 0 || tokens.length > this.positions) {
      throw new Error(`internal error: ${tokens.length} tokens for a ${this.positions}-position model`);
    }
    await this.sequence.eraseContextTokenRanges([{start: 0, end: this.sequence.nextTokenIndex}]);
    await this.sequence.evaluateWithoutGeneratingNewTokens([...tokens]);
    return pooledEmbedding(this.context, tokens.length);
  }

  async close(): Promise<void> {
    await this.context.dispose();
    await this.cleanup();
  }
}
