// POST /v1/rerank (Cohere/Jina style): score each document against the query and return them sorted by
// relevance_score, highest first, each with its index into the request's list.

import {randomBytes} from "node:crypto";
import type {FastifyInstance} from "fastify";
import {ApiError, invalidField} from "../../../core/errors.ts";
import {RerankerRunner} from "../../../side-models/reranker/runner.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";

/** Documents per request: the spec is silent; each is a pass or part of one, so a request is kept sane. */
export const MAX_DOCUMENTS = 1000;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export interface RerankRequest {
  model: unknown;
  query: string;
  documents: string[];
  topN: number;
  returnDocuments: boolean;
  instruction: string | undefined;
}

export function decodeRerank(body: unknown): RerankRequest {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object with model, query and documents");
  if (typeof body.query !== "string" || body.query.trim() === "") throw invalidField("query", "must be a non-empty string");
  if (!Array.isArray(body.documents) || body.documents.length === 0) throw invalidField("documents", "must be a non-empty array of strings or {text} objects");
  if (body.documents.length > MAX_DOCUMENTS) throw invalidField("documents", `at most ${MAX_DOCUMENTS} documents per request (found ${body.documents.length})`);
  const documents = body.documents.map((d, i) => {
    if (typeof d === "string") return d;
    if (isObject(d) && typeof d.text === "string") return d.text;
    throw invalidField(`documents[${i}]`, "must be a string or an object with a text field");
  });
  let topN = documents.length;
  if (body.top_n !== undefined && body.top_n !== null) {
    if (typeof body.top_n !== "number" || !Number.isInteger(body.top_n) || body.top_n < 1) throw invalidField("top_n", "must be a positive integer");
    topN = Math.min(body.top_n, documents.length);
  }
  const returnDocuments = body.return_documents ?? false;
  if (typeof returnDocuments !== "boolean") throw invalidField("return_documents", "must be a boolean");
  let instruction: string | undefined;
  if (body.instruction !== undefined && body.instruction !== null) {
    if (typeof body.instruction !== "string" || body.instruction.trim() === "") {
      throw invalidField("instruction", "must be a non-empty string (it replaces the default task line)");
    }
    instruction = body.instruction;
  }
  return {model: body.model, query: body.query, documents, topN, returnDocuments, instruction};
}

export function registerRerankRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  app.post("/v1/rerank", async (req, reply) => {
    const decoded = decodeRerank(req.body);
    const runner = side.pick<RerankerRunner>("reranker", decoded.model);
    const prompts = runner.prompts(decoded.query, decoded.documents, decoded.instruction);
    prompts.forEach((p, i) => {
      if (p.tokens.length > runner.maxPairTokens) {
        throw new ApiError("invalid_request", `documents[${i}]: the query and document pair takes ${p.tokens.length} tokens with the template; ` +
          `the limit is ${runner.maxPairTokens}`, {param: `documents[${i}]`});
      }
    });
    const abort = hangUpSignal(req, reply);
    const scores = await runner.score(prompts, {batching: deps.config.npuEmbBatch, signal: abort.signal});
    const order = scores.map((s, index) => ({index, s})).sort((a, b) => b.s.relevance - a.s.relevance || a.index - b.index);
    const promptTokens = scores.reduce((a, s) => a + s.promptTokens, 0);
    const cached = scores.reduce((a, s) => a + s.reused, 0);
    return {
      id: `rerank-${randomBytes(12).toString("hex")}`,
      model: runner.id,
      results: order.slice(0, decoded.topN).map(({index, s}) => ({
        index,
        relevance_score: s.relevance,
        ...(decoded.returnDocuments ? {document: {text: decoded.documents[index]}} : {}),
      })),
      usage: {prompt_tokens: promptTokens, total_tokens: promptTokens, cached_tokens: cached},
    };
  });
}
