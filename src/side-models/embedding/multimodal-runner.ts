// embeddingnx-2 (format `multimodal`): texts, pictures and sound in one vector space. node-llama-cpp has no
// multimodal support, so the model runs in a llama-server child (its GGUF with the projector that reads pictures
// and sound, `--embeddings --pooling mean`), supervised like every child and listed in /health. Each input is one
// pass on the side executor (the spec: "each takes its own NPU pass"), queued with the other side models' passes.
//
// Its source names two files, `<model>+<projector>` (each a path or model source as for SVC_MODEL), because no
// registry ships such weights: the tests give it a generated pair.

import {dirname} from "node:path";
import {EngineRestartingError} from "../../engine/index.ts";
import {ensureLlamaServer} from "../../models/llama-server-build.ts";
import {resolveModel} from "../../models/resolve.ts";
import {startLlamaServerChild, type LlamaServerChild} from "../llama-server-child.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import type {SideExecutor} from "../executor.ts";
import {MultimodalSourceError, splitMultimodalSource} from "./multimodal-source.ts";

/** The prompts `prompt_name` puts before a text (the sentence-transformers prompts of the model the id stands for). */
export const MULTIMODAL_PROMPTS = {query: "task: search result | query: ", document: "title: none | text: "} as const;

/** The spec's limits for embeddingnx-2. */
export const MULTIMODAL_LIMITS = {textTokens: 8192, audioSeconds: 30, media: 64, pictureBase64: 32 * 1024 * 1024, dimensions: 768} as const;

export type MultimodalInput = {kind: "text"; text: string} | {kind: "picture"; png: Uint8Array} | {kind: "audio"; wav: Uint8Array};

interface EmbeddingsAnswer {
  data?: {embedding: number[]}[];
  usage?: {prompt_tokens?: number};
}

export class MultimodalEmbeddingRunner implements SideRunner {
  readonly kind = "embedding" as const;
  readonly multimodal = true;
  private passes = 0;

  private constructor(readonly id: string, readonly path: string, readonly dimensions: number, private readonly child: LlamaServerChild,
    private readonly executor: SideExecutor, private readonly waitMs: number) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<MultimodalEmbeddingRunner> {
    const {model, projector} = splitMultimodalSource(def.id, def.source);
    const opts = {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress};
    const [text, proj] = [await resolveModel(model, opts), await resolveModel(projector, opts)];
    const binary = ensureLlamaServer({cacheDir: dirname(ctx.modelsDir), log: (line) => ctx.logger.info(line)}).binary;
    // One input at a time, each read whole: a text of 8,192 tokens (the prompt included) or 30 s of sound in one batch.
    const positions = MULTIMODAL_LIMITS.textTokens + 64;
    const child = await startLlamaServerChild({name: def.id, label: `the embedding model ${def.id}`, binary, logger: ctx.logger,
      args: ["-m", text.path, "--mmproj", proj.path, "--embeddings", "--pooling", "mean", "-np", "1", "-c", String(positions),
        // Flash attention keeps the attention scratch of an 8,192-token batch small (without it, a square of the batch).
        "-b", String(positions), "-ub", String(positions), "-fa", "on", "-t", String(ctx.threads), "--no-webui"]});
    ctx.children.add(child.supervisor);
    try {
      const props = await (await fetch(`${child.url}/props`)).json() as {modalities?: {vision?: boolean; audio?: boolean}};
      const meta = await (await fetch(`${child.url}/v1/models`)).json() as {data?: {meta?: {n_embd?: number}}[]};
      const width = meta.data?.[0]?.meta?.n_embd ?? 0;
      if (!props.modalities?.vision || !props.modalities.audio) {
        throw new MultimodalSourceError(`SVC_NPU_MODELS: ${def.id}'s projector ${proj.path} reads ` +
          `${props.modalities?.vision ? "pictures" : props.modalities?.audio ? "sound" : "neither pictures nor sound"} only; ` +
          "it needs one that reads both");
      }
      if (width < MULTIMODAL_LIMITS.dimensions) {
        throw new MultimodalSourceError(`SVC_NPU_MODELS: ${def.id}'s model ${text.path} makes ${width}-wide vectors; ` +
          `${def.id} gives ${MULTIMODAL_LIMITS.dimensions}`);
      }
      return new MultimodalEmbeddingRunner(def.id, text.path, MULTIMODAL_LIMITS.dimensions, child, ctx.executor, ctx.queueTimeoutMs);
    } catch (err) {
      await child.supervisor.stop();
      throw err;
    }
  }

  /** Tokens a text takes, the model's start token included (the 8,192-token limit counts them). */
  async countTokens(text: string, signal?: AbortSignal): Promise<number> {
    const res = await this.call("/tokenize", {content: text, add_special: true, parse_special: false}, signal);
    return (res as {tokens: number[]}).tokens.length;
  }

  /** One vector per input, in order, and the positions each took; one executor pass per input. */
  async embed(inputs: readonly MultimodalInput[], signal?: AbortSignal): Promise<{vectors: Float32Array[]; positions: number}> {
    const vectors: Float32Array[] = [];
    let positions = 0;
    for (const input of inputs) {
      await this.child.supervisor.whenReady(this.waitMs, signal);
      const answer = await this.executor.run(async () => {
        const release = this.child.supervisor.busy();
        try {
          return await this.call("/v1/embeddings", {input: [this.item(input)], encoding_format: "float"}, signal) as EmbeddingsAnswer;
        } finally {
          release();
        }
      }, signal);
      const vector = answer.data?.[0]?.embedding;
      if (!vector) throw new Error(`${this.id} answered without a vector`);
      vectors.push(Float32Array.from(vector.slice(0, this.dimensions)));
      positions += answer.usage?.prompt_tokens ?? 0;
      this.passes++;
    }
    return {vectors, positions};
  }

  private item(input: MultimodalInput): unknown {
    if (input.kind === "text") return input.text;
    const bytes = input.kind === "picture" ? input.png : input.wav;
    return {prompt_string: this.child.mediaMarker, multimodal_data: [Buffer.from(bytes).toString("base64")]};
  }

  /** A call to the child; one that dies under it is a 503 naming this model (the supervisor restarts it). */
  private async call(path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.child.url}${path}`, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body), signal});
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new EngineRestartingError(`the embedding model ${this.id} stopped answering (${(err as Error).message}); it is being restarted; retry shortly`, 2);
    }
    const text = await res.text();
    if (res.status === 503) throw new EngineRestartingError(`the embedding model ${this.id} is loading; retry shortly`, 2);
    if (!res.ok) throw new Error(`${this.id}: ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  }

  describe(): Record<string, unknown> {
    return {dimensions: this.dimensions, inputs: ["text", "picture", "audio"], text_tokens: MULTIMODAL_LIMITS.textTokens,
      audio_seconds: MULTIMODAL_LIMITS.audioSeconds, pictures_and_clips: MULTIMODAL_LIMITS.media, passes: this.passes, engine: "llama-server child"};
  }

  async close(): Promise<void> {
    await this.child.supervisor.stop();
  }
}
