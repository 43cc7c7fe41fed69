// POST /v1/chat/completions (also without the /v1 prefix, as llama.cpp's server and many clients use it).

import {randomBytes} from "node:crypto";
import type {FastifyInstance} from "fastify";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import {serveSideChat} from "../../side/chat-side.ts";
import {openChatGuard, withGuard} from "../../side/guard/index.ts";
import {decodeChat} from "./decode.ts";
import {chatCompletionBody, chatStreamEncoder} from "./encode.ts";

export function registerChatRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const handler = async (req: import("fastify").FastifyRequest, reply: import("fastify").FastifyReply) => {
    const sideRunner = deps.side?.find((req.body as {model?: unknown} | null)?.model);
    if (sideRunner) return serveSideChat(deps, sideRunner, req, reply);
    const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
    const abort = hangUpSignal(req, reply);
    const decoded = decodeChat(req.body, {requestId: id, signal: abort.signal, maxTokensCap: deps.config.maxTokensCap,
      schemas: deps.schemas, grammarEnabled: deps.config.grammar, strictTools: deps.config.strictTools, logger: deps.logger, counters: deps.counters});
    const who = {id, created: Math.floor(Date.now() / 1000), model: deps.main.identity.id};
    // The streaming guard, when asked for (refused with 400 here, before the reply starts); null otherwise.
    const guard = openChatGuard(deps, req, decoded.body.guard, decoded.request, who);
    await serveGeneration(deps, deps.main, req, reply, {
      route: "chat",
      stream: decoded.stream,
      sessions: true,
      genRequest: decoded.request,
      collect: (events) => withGuard(chatCompletionBody(who, events), guard),
      encoder: () => chatStreamEncoder(who, decoded.includeUsage),
      watcher: guard,
    });
  };
  app.post("/v1/chat/completions", handler);
  app.post("/chat/completions", handler);
}
