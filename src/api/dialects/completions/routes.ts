// POST /v1/completions (also without the /v1 prefix).

import {randomBytes} from "node:crypto";
import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import {decodeCompletion} from "./decode.ts";
import {completionBody, completionStreamEncoder} from "./encode.ts";

export function registerCompletionsRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = `cmpl-${randomBytes(12).toString("hex")}`;
    const model = deps.models.mainOnly(req.body);
    const abort = hangUpSignal(req, reply);
    const decoded = decodeCompletion(req.body, {maxTokensCap: deps.config.maxTokensCap});
    const who = {id, created: Math.floor(Date.now() / 1000), model: model.id};
    await serveGeneration(deps, model.handle, req, reply, {
      route: "completions",
      transport: {requestId: id, signal: abort.signal},
      stream: decoded.stream,
      genRequest: decoded.request,
      collect: (events) => completionBody(who, events, decoded.request.logprobs?.top ?? 0),
      encoder: () => completionStreamEncoder(who, decoded.includeUsage),
    });
  };
  app.post("/v1/completions", handler);
  app.post("/completions", handler);
}
