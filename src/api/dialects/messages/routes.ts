// POST /v1/messages and /v1/messages/count_tokens, the Messages-style route (also without the /v1 prefix,
// as clients whose base URL already ends in /v1 call it). Fastify matches the path, so Claude Code's
// `/v1/messages?beta=true` lands here too. Every error under these paths, including the auth hook's 401
// and unparsable JSON, answers in Anthropic's shape, its request_id the request-id header's.

import {randomBytes} from "node:crypto";
import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import {decodeContext} from "../../decode-context.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import type {ModelHandle} from "../../../pipeline/model-handle.ts";
import {registerErrorShape} from "../../server.ts";
import {decodeMessages, LogOnce, type MessagesDecodeContext} from "./decode.ts";
import {messageBody, messageStreamEncoder} from "./encode.ts";
import {anthropicErrorBody, requestIdOf} from "./errors.ts";
import {claudeCodeThread} from "./agent-thread.ts";

export function registerMessagesRoutes(app: FastifyInstance, deps: ServerDeps): void {
  // One per server (so once per process): what the log has already been told.
  const notes = new LogOnce(deps.logger);
  const context = (req: FastifyRequest, requestId: string, model: ModelHandle): MessagesDecodeContext =>
    ({...decodeContext(deps, requestId, model), headers: req.headers, notes});

  const create = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = `msg_${randomBytes(12).toString("hex")}`;
    // Anthropic's SDK reports this header as the request id; it is the id on the server's log line too.
    reply.header("request-id", id);
    const abort = hangUpSignal(req, reply);
    const model = deps.models.mainOnly(req.body);
    const decoded = decodeMessages(req.body, context(req, id, model.handle), "create");
    const who = {id, model: model.id, stopSequences: decoded.stopSequences, thinkingDisplay: decoded.thinkingDisplay};
    await serveGeneration(deps, model.handle, req, reply, {
      route: "messages",
      transport: {requestId: id, signal: abort.signal},
      stream: decoded.stream,
      sessions: true,
      genRequest: decoded.request,
      collect: (events) => messageBody(who, events),
      agentThread: () => claudeCodeThread(req.headers, req.body),
      encoder: (start) => messageStreamEncoder(who, start),
    });
  };

  // The SDK's messages.countTokens: the prompt this body would make, rendered as generation renders it, not run.
  // A prompt longer than the context is counted, not refused: the count is what a client asks it for.
  const countTokens = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = `count_${randomBytes(8).toString("hex")}`;
    reply.header("request-id", id);
    const decoded = decodeMessages(req.body, context(req, id, deps.main), "count");
    return {input_tokens: await deps.main.pipeline.countPromptTokens(decoded.request)};
  };

  for (const prefix of ["/v1", ""]) {
    registerErrorShape(app, `${prefix}/messages`, (err, reply) => anthropicErrorBody(err, requestIdOf(reply)));
    app.post(`${prefix}/messages`, create);
    app.post(`${prefix}/messages/count_tokens`, countTokens);
  }
}
