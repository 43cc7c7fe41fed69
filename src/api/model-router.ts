// The model a generation request is for, chosen from its `model` field before any dialect reads the body.
// The dialects see only this contract; what stands behind a side model's id (small generation, a decider) is
// wired in by the composition root (src/api/routing/), so dialect code never imports side-model code.

import type {GenerationEvent, GenerationRequest, SamplingParams} from "../core/generation.ts";
import type {FastifyRequest} from "fastify";
import type {ModelHandle} from "../pipeline/model-handle.ts";
import type {ReplyWatcher} from "./serve-generation.ts";

/** A generation model as a route serves it: its handle and the rules it adds to the dialect's own. */
export interface ServedModel {
  handle: ModelHandle;
  /** The `model` replies carry. */
  id: string;
  /** The request log's route name for requests served by it on the chat route. */
  chatRoute: string;
  /** X-Svc-Keep / X-Svc-From and the coding-agent mapping apply. */
  sessions: boolean;
  /** The streaming guard may watch its replies. */
  guarded: boolean;
  /** Refusals read from the raw body before the dialect decodes it (what this model lacks), so they name the real reason. */
  screen?(body: Record<string, unknown>): void;
  /** Sampling where the request sets none, in place of the server's defaults. */
  samplingDefaults?: Partial<SamplingParams>;
  /** The model answers with thinking off. */
  thinkingOff?: boolean;
  /** Refuses a prompt (its token count, template included) the model cannot take, before a region is waited for. */
  checkPrompt?(promptTokens: number): void;
}

/** An answer known whole before any byte is sent (a decision): its events, and how the client asked to get them. */
export interface WholeAnswer {
  id: string;
  stream: boolean;
  includeUsage: boolean;
  events: GenerationEvent[];
}

/** What the chat route serves a request with: a generation model, or a model that answers whole. */
export type ChatTarget = {kind: "generate"; model: ServedModel} | {kind: "answer"; answer(body: unknown, signal: AbortSignal): Promise<WholeAnswer>};

export interface ModelRouter {
  /** The chat route: the main model, or a side model's id that answers there. */
  chat(body: unknown): ChatTarget;
  /** The other generation routes: the main model; a side model's id is refused naming the route that serves it. */
  mainOnly(body: unknown): ServedModel;
  /** POST /apply-template: the generation model whose template renders a chat body (no decider: it renders none). */
  templated(body: unknown): ServedModel;
}

/** A watcher of the reply, attached by the composition root (the streaming guard); null when the request asks for none. */
export interface ChatWatcher extends ReplyWatcher {
  /** The non-streamed body with the watcher's own field added, once the reply is finished. */
  finishBody<B extends object>(body: B): B;
}

export interface ChatWatchers {
  /** Opens a watcher for the request (400 before the reply starts when the ask is bad), or null. */
  open(req: FastifyRequest, request: GenerationRequest, who: {id: string; created: number; model: string}): ChatWatcher | null;
}

/** The main model as every route serves it. */
export function mainModel(handle: ModelHandle): ServedModel {
  return {handle, id: handle.identity.id, chatRoute: "chat", sessions: true, guarded: true};
}
