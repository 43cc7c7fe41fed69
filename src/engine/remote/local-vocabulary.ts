// The model's vocabulary, read from the same GGUF the replicas serve, without its weights (llama.cpp's
// vocab-only load: a few MB, under a second). The pipeline tokenizes, detokenizes and reads token bytes on
// every step, synchronously: asking a replica over HTTP each time would put a round trip in every token.
// Start-time checks (remote-identity.ts) prove the replicas tokenize as this vocabulary does.

import {getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token} from "node-llama-cpp";
import type {Logger} from "../../observability/log.ts";
import {isEndOfGeneration} from "../llama/internals.ts";
import {tokenTextToBytes, type VocabKind} from "../llama/token-bytes.ts";

export class LocalVocabulary {
  private readonly texts: readonly string[];
  private readonly kind: VocabKind;
  readonly eog: ReadonlySet<number>;

  private constructor(readonly llama: Llama, readonly model: LlamaModel) {
    const tokenizer = model.fileInfo.metadata.tokenizer.ggml as unknown as {model?: string; tokens: string[]};
    this.texts = tokenizer.tokens;
    this.kind = tokenizer.model === "gpt2" ? "gpt2" : tokenizer.model === "llama" ? "llama" : "other";
    const eog = new Set<number>();
    for (let t = 0; t < this.texts.length; t++) if (isEndOfGeneration(model, t)) eog.add(t);
    this.eog = eog;
  }

  static async load(modelPath: string, logger: Logger): Promise<LocalVocabulary> {
    const llama = await getLlama({gpu: false, maxThreads: 0, logLevel: LlamaLogLevel.error,
      logger: (level, message) => {
        if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) logger.error("engine", {message: message.trim()});
      }});
    const model = await llama.loadModel({modelPath, vocabOnly: true});
    return new LocalVocabulary(llama, model);
  }

  get size(): number {
    return this.texts.length;
  }

  tokenize(text: string, special: boolean): number[] {
    return this.model.tokenize(text, special) as number[];
  }

  detokenize(tokens: readonly number[], special: boolean, context?: readonly number[]): string {
    return this.model.detokenize(tokens as never, special, context as never);
  }

  tokenBytes(token: number): Uint8Array {
    return tokenTextToBytes(this.texts[token] ?? "", this.kind, this.model.isSpecialToken(token as Token));
  }

  async close(): Promise<void> {
    await this.model.dispose();
    await this.llama.dispose();
  }
}
