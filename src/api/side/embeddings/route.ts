// POST /v1/embeddings: OpenAI's embeddings shape over the loaded embedding side models. Vectors are unit
// length; `dimensions` keeps the first dimensions and renormalises; `base64` is little-endian float32,
// as OpenAI sends it (the official client decodes it to the same floats).

import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import {ApiError, invalidField} from "../../../core/errors.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {EmbeddingRunner} from "../../../side-models/embedding/runner.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";
import {decodeEmbeddings} from "./decode.ts";
import {decodeMultimodal} from "./multimodal.ts";
import {MultimodalEmbeddingRunner} from "../../../side-models/embedding/multimodal-runner.ts";

/** The first `dims` values of a vector, scaled to unit length, as float32 (the wire precision). */
export function truncateAndNormalize(vector: ArrayLike<number>, dims: number): Float32Array {
  let norm = 0;
  for (let i = 0; i < dims; i++) norm += vector[i]! * vector[i]!;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  const out = new Float32Array(dims);
  for (let i = 0; i < dims; i++) out[i] = vector[i]! * scale;
  return out;
}

export function toBase64(v: Float32Array): string {
  const le = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) le.writeFloatLE(v[i]!, i * 4);
  return le.toString("base64");
}

export function registerEmbeddingsRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const model = (req.body as {model?: unknown} | null)?.model;
    const picked = side.pick<EmbeddingRunner | MultimodalEmbeddingRunner>("embedding", model);
    if (picked instanceof MultimodalEmbeddingRunner) return serveMultimodal(req, reply, picked);
    const runner = picked;
    const request = decodeEmbeddings(req.body, runner.dimensions);
    const tokens = request.texts.map((t) => runner.tokenize(t));
    tokens.forEach((t, i) => {
      if (t.length > runner.inputLimit) {
        throw invalidField(`input[${i}]`, `is ${t.length} tokens; ${runner.id} reads at most ${runner.inputLimit} tokens per input ` +
          `([CLS] and [SEP] included${request.texts[i]!.startsWith("Instruct: ") ? ", and the query instruction" : ""})`);
      }
    });
    const abort = hangUpSignal(req, reply);
    let vectors: Float64Array[];
    try {
      vectors = await runner.embed(tokens, {batch: deps.config.npuEmbBatch, signal: abort.signal});
    } catch (e) {
      if (abort.signal.aborted && !(e instanceof ApiError)) {
        throw new ApiError("client_closed", "the client closed the connection; the embedding was cancelled");
      }
      throw e;
    }
    const dims = request.dimensions ?? runner.dimensions;
    const promptTokens = tokens.reduce((a, t) => a + t.length, 0);
    return {
      object: "list",
      data: vectors.map((v, index) => {
        const unit = truncateAndNormalize(v, dims);
        return {object: "embedding", index, embedding: request.encoding === "base64" ? toBase64(unit) : Array.from(unit)};
      }),
      model: runner.id,
      usage: {prompt_tokens: promptTokens, total_tokens: promptTokens},
    };
  };
  /** embeddingnx-2: texts, pictures and clips mixed (multimodal.ts), one vector each, in order. */
  const serveMultimodal = async (req: FastifyRequest, reply: FastifyReply, runner: MultimodalEmbeddingRunner) => {
    const abort = hangUpSignal(req, reply);
    const request = await decodeMultimodal(req.body, runner, abort.signal);
    let out: Awaited<ReturnType<MultimodalEmbeddingRunner["embed"]>>;
    try {
      out = await runner.embed(request.inputs, abort.signal);
    } catch (e) {
      if (abort.signal.aborted && !(e instanceof ApiError)) {
        throw new ApiError("client_closed", "the client closed the connection; the embedding was cancelled");
      }
      throw e;
    }
    return {
      object: "list",
      data: out.vectors.map((v, index) => {
        const unit = truncateAndNormalize(v, request.dimensions);
        return {object: "embedding", index, embedding: request.encoding === "base64" ? toBase64(unit) : Array.from(unit)};
      }),
      model: runner.id,
      usage: {prompt_tokens: out.positions, total_tokens: out.positions},
    };
  };
  app.post("/v1/embeddings", handler);
  app.post("/embeddings", handler);
}
