// POST /v1/chat/completions (also without the /v1 prefix, as llama.cpp's server and many clients use it).
// The model router picks what serves the body's `model`: a generation model (the main one, or small
// generation with its own rules), or a model that answers whole (a decider), whose events this dialect encodes.

import {randomBytes} from "node:crypto";
import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import {decodeContext} from "../../decode-context.ts";
import type {ServerDeps} from "../../deps.ts";
import type {ServedModel, WholeAnswer} from "../../model-router.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import {SseStream} from "../../sse.ts";
import {decodeChat} from "./decode.ts";
import {chatCompletionBody, chatStreamEncoder, wholeAnswerChunks} from "./encode.ts";

export function registerChatRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const target = deps.models.chat(req.body);
    if (target.kind === "answer") return sendWhole(deps, reply, await target.answer(req.body, hangUpSignal(req, reply).signal));
    return generate(deps, target.model, req, reply);
  };
  app.post("/v1/chat/completions", handler);
  app.post("/chat/completions", handler);
}

async function generate(deps: ServerDeps, model: ServedModel, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
  const abort = hangUpSignal(req, reply);
  const decoded = decodeChat(req.body, decodeContext(deps, id, model.handle), model);
  // Before the region is waited for, so an over-long prompt is a 400 naming the model's own limit.
  if (model.checkPrompt) model.checkPrompt(await model.handle.pipeline.countPromptTokens(decoded.request));
  const who = {id, created: Math.floor(Date.now() / 1000), model: model.id};
  // The streaming guard, when asked for (refused with 400 here, before the reply starts); null otherwise.
  const watcher = model.guarded ? deps.watchers?.open(req, decoded.request, who) ?? null : null;
  await serveGeneration(deps, model.handle, req, reply, {
    route: model.chatRoute,
    transport: {requestId: id, signal: abort.signal},
    stream: decoded.stream,
    sessions: model.sessions,
    genRequest: decoded.request,
    collect: (events) => (watcher ? watcher.finishBody(chatCompletionBody(who, events)) : chatCompletionBody(who, events)),
    encoder: () => chatStreamEncoder(who, decoded.includeUsage),
    watcher,
  });
}

/** An answer known whole: a chat.completion body, or a stream of one content chunk, the finish and the usage. */
function sendWhole(deps: ServerDeps, reply: FastifyReply, answer: WholeAnswer): unknown {
  const who = {id: `chatcmpl-${randomBytes(12).toString("hex")}`, created: Math.floor(Date.now() / 1000), model: answer.id};
  if (!answer.stream) return chatCompletionBody(who, answer.events);
  reply.hijack();
  const sse = new SseStream(reply.raw, deps.config.keepalive * 1000);
  for (const frame of wholeAnswerChunks(who, answer.events, answer.includeUsage)) sse.send(frame);
  sse.send("[DONE]");
  sse.end();
  return undefined;
}
