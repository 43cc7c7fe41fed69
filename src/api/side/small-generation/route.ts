// Small generation (model nx3.5-2b) on the chat route: the chat dialect's decode and encode and the shared
// serveGeneration, handed the small model's own handle (engine, pipeline, template, identity). Sessions and
// the coding-agent mapping do not apply to it; neither does the prompt cache.

import {randomBytes} from "node:crypto";
import type {FastifyReply, FastifyRequest} from "fastify";
import {ApiError} from "../../../core/errors.ts";
import type {ServerDeps} from "../../deps.ts";
import {chatCompletionBody, chatStreamEncoder} from "../../dialects/chat/encode.ts";
import {hangUpSignal, serveGeneration} from "../../serve-generation.ts";
import type {SideRunner} from "../../../side-models/side-models.ts";
import {checkSmallPrompt} from "../../../side-models/small-generation/limits.ts";
import {SmallGenerationRunner} from "../../../side-models/small-generation/runner.ts";
import {decodeSmallGeneration} from "./decode.ts";

export async function serveSmallGeneration(deps: ServerDeps, runner: SideRunner, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  if (!(runner instanceof SmallGenerationRunner)) {
    throw new ApiError("server_error", `internal error: ${runner.id} is not served by the small-generation runner`);
  }
  const model = runner.handle({queueTimeoutMs: deps.config.queueTimeout * 1000, maxToolCalls: deps.config.maxToolCalls, logger: deps.logger});
  const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
  const abort = hangUpSignal(req, reply);
  const decoded = decodeSmallGeneration(runner.id, req.body, {requestId: id, signal: abort.signal, maxTokensCap: deps.config.maxTokensCap,
    schemas: deps.schemas, grammarEnabled: deps.config.grammar, strictTools: deps.config.strictTools, logger: deps.logger, counters: deps.counters});
  // Before the region is waited for, so an over-long prompt is a 400 naming the small model's limit.
  checkSmallPrompt(runner.id, model.pipeline.countPromptTokens(decoded.request), runner.contextSize);
  const who = {id, created: Math.floor(Date.now() / 1000), model: runner.id};
  await serveGeneration(deps, model, req, reply, {
    route: "chat_small_generation",
    stream: decoded.stream,
    sessions: false,
    genRequest: decoded.request,
    collect: (events) => chatCompletionBody(who, events),
    encoder: () => chatStreamEncoder(who, decoded.includeUsage),
  });
  return undefined;
}
