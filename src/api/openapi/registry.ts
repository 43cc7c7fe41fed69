// What /openapi.json says about each route: its request schema (the zod schema the route validates with, or for the
// side routes the restatement in side-schemas.ts), its success reply and how it streams. Keyed by "METHOD /path" as
// fastify registers it; document.ts refuses to describe a registered route that has no entry here, so a new route
// cannot ship undocumented (test/integration/openapi.test.ts fails first).

import {z} from "zod";
import {chatRequestSchema} from "../dialects/chat/schema.ts";
import {completionsRequestSchema} from "../dialects/completions/schema.ts";
import {countTokensSchema, messagesSchema} from "../dialects/messages/schema.ts";
import {responsesRequestSchema} from "../dialects/responses/schema.ts";
import {detokenizeSchema, tokenizeSchema} from "../ops/tokenize-routes.ts";
import {classifyRequestSchema, decideRequestSchema, embeddingsRequestSchema, moderationRequestSchema, rerankRequestSchema,
  transcriptionRequestSchema, imageGenerationRequestSchema, imageEditRequestSchema, imageVariationRequestSchema} from "./side-schemas.ts";

export type Tag = "generation" | "ops" | "side";

export interface RouteDoc {
  summary: string;
  tag: Tag;
  /** The JSON body's schema; absent for routes that read none. */
  body?: z.ZodType;
  /** A multipart/form-data body instead of JSON (file uploads). */
  multipart?: z.ZodType;
  /** The 200 reply: a components.schemas name (shapes.ts), and its media type when not JSON. */
  ok: {schema: string; mediaType?: string};
  /** Answers text/event-stream when the body asks for `stream: true`. */
  streams?: boolean;
  /** Refuses max_tokens (and its aliases) above SVC_MAX_TOKENS_CAP: the document carries the cap as the maximum. */
  budgetRefusedOverCap?: boolean;
  /** Statuses beyond the ones every route can answer (document.ts COMMON_ERRORS). */
  errors?: number[];
  /** Reads the named-session headers (X-Svc-Keep, X-Svc-From; fields/session-headers.ts). */
  sessions?: boolean;
  /** Path parameters, by name. */
  params?: Record<string, string>;
}

const chat: RouteDoc = {summary: "OpenAI chat completion", tag: "generation", body: chatRequestSchema, ok: {schema: "ChatCompletion"}, streams: true,
  budgetRefusedOverCap: true, sessions: true};
const completions: RouteDoc = {summary: "OpenAI legacy completion: a raw prompt, no template", tag: "generation",
  body: completionsRequestSchema, ok: {schema: "Completion"}, streams: true, budgetRefusedOverCap: true};
const responses: RouteDoc = {summary: "OpenAI Responses: create a response", tag: "generation", body: responsesRequestSchema,
  ok: {schema: "Response"}, streams: true, budgetRefusedOverCap: true, sessions: true};
const inputTokens: RouteDoc = {summary: "Responses: count the prompt tokens this body would make", tag: "generation",
  body: responsesRequestSchema, ok: {schema: "InputTokens"}, budgetRefusedOverCap: true};
const noStore = (what: string): RouteDoc => ({summary: `Responses: ${what} a stored response (there is no store: always 404)`,
  tag: "generation", ok: {schema: "AnyObject"}, params: {id: "a response id"}});
const messages: RouteDoc = {summary: "Anthropic Messages: create a message", tag: "generation", body: messagesSchema,
  ok: {schema: "Message"}, streams: true, sessions: true};
const countTokens: RouteDoc = {summary: "Anthropic Messages: count the prompt tokens this body would make", tag: "generation",
  body: countTokensSchema, ok: {schema: "InputTokens"}};
const models: RouteDoc = {summary: "The models this server serves (OpenAI and Anthropic list shapes)", tag: "ops", ok: {schema: "ModelList"}};
const embeddings: RouteDoc = {summary: "Embeddings from a loaded side embedding model", tag: "side", body: embeddingsRequestSchema,
  ok: {schema: "EmbeddingList"}};

const both = (path: string, doc: RouteDoc): [string, RouteDoc][] => [[`${path.split(" ")[0]} /v1${path.split(" ")[1]}`, doc], [path, doc]];

export const ROUTE_DOCS: ReadonlyMap<string, RouteDoc> = new Map<string, RouteDoc>([
  ...both("POST /chat/completions", chat),
  ...both("POST /completions", completions),
  ...both("POST /responses", responses),
  ...both("POST /responses/input_tokens", inputTokens),
  ...both("GET /responses/{id}", noStore("retrieve")),
  ...both("DELETE /responses/{id}", noStore("delete")),
  ...both("POST /responses/{id}/cancel", noStore("cancel")),
  ...both("GET /responses/{id}/input_items", noStore("list the input items of")),
  ...both("POST /messages", messages),
  ...both("POST /messages/count_tokens", countTokens),
  ...both("GET /models", models),
  ["GET /health", {summary: "What this build serves and the engine's state; open without a key", tag: "ops", ok: {schema: "Health"}}],
  ["GET /cache", {summary: "The prompt cache's report", tag: "ops", ok: {schema: "AnyObject"}}],
  ["GET /props", {summary: "llama.cpp-style server properties", tag: "ops", ok: {schema: "AnyObject"}}],
  ["GET /slots", {summary: "The engine's regions (llama.cpp's slots)", tag: "ops", ok: {schema: "Slots"}}],
  ["GET /metrics", {summary: "Prometheus metrics", tag: "ops", ok: {schema: "Text", mediaType: "text/plain"}}],
  ["POST /tokenize", {summary: "Text to token ids", tag: "ops", body: tokenizeSchema, ok: {schema: "Tokens"}}],
  ["POST /detokenize", {summary: "Token ids to text", tag: "ops", body: detokenizeSchema, ok: {schema: "Detokenized"}}],
  ["POST /apply-template", {summary: "The prompt the chat route would render for a chat body", tag: "ops", body: chatRequestSchema,
    ok: {schema: "Prompt"}, budgetRefusedOverCap: true}],
  ["GET /svc/handles", {summary: "Live session handles (SVC_FORK=1)", tag: "ops", ok: {schema: "HandleList"}}],
  ["DELETE /svc/handles/{name}", {summary: "Release a session handle", tag: "ops", ok: {schema: "HandleReleased"},
    params: {name: "the handle's name (X-Svc-Keep)"}}],
  ["GET /openapi.json", {summary: "This document", tag: "ops", ok: {schema: "AnyObject"}}],
  ["GET /", {summary: "The playground page", tag: "ops", ok: {schema: "Text", mediaType: "text/html"}}],
  ["GET /playground/{path}", {summary: "The playground's assets (scripts, styles, vendored UI library)", tag: "ops",
    ok: {schema: "Text", mediaType: "*/*"}, params: {path: "the asset's name"}}],
  ...both("POST /embeddings", embeddings),
  ["POST /classify", {summary: "Sequence classification with a loaded classifier", tag: "side", body: classifyRequestSchema,
    ok: {schema: "AnyObject"}}],
  ["POST /v1/rerank", {summary: "Rerank documents against a query", tag: "side", body: rerankRequestSchema, ok: {schema: "AnyObject"}}],
  ["POST /v1/moderations", {summary: "Moderation with a loaded guard model", tag: "side", body: moderationRequestSchema,
    ok: {schema: "AnyObject"}}],
  ["POST /v1/decide", {summary: "Decisions (choice, score, yes/no) from a loaded decision model", tag: "side", body: decideRequestSchema,
    ok: {schema: "AnyObject"}, errors: [422]}],
  ["POST /v1/audio/transcriptions", {summary: "Speech to text with the loaded speech model (json, text, verbose_json, srt, vtt)", tag: "side",
    multipart: transcriptionRequestSchema, ok: {schema: "AnyObject"}}],
  ["POST /v1/images/generations", {summary: "Draw pictures from a prompt with the loaded image model (PNG)", tag: "side",
    body: imageGenerationRequestSchema, ok: {schema: "AnyObject"}}],
  ["POST /v1/images/edits", {summary: "Edit a picture by a prompt with the loaded image model (512x512 PNG)", tag: "side",
    multipart: imageEditRequestSchema, ok: {schema: "AnyObject"}}],
  ["POST /v1/images/variations", {summary: "Variations of a picture with the loaded image model (512x512 PNG)", tag: "side",
    multipart: imageVariationRequestSchema, ok: {schema: "AnyObject"}}],
]);
