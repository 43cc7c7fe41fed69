// Small generation (model nx3.5-2b) on the chat route: the chat dialect's decode and encode and the shared
// serveGeneration, handed a copy of the server's deps whose engine, pipeline, template and model are the
// small model's. Sessions and the coding-agent mapping do not apply to it; neither does the prompt cache.

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

/** The deps copy per runner, built on first use (the pipeline needs SVC_QUEUE_TIMEOUT from the config). */
const sideDepsOf = new WeakMap<SmallGenerationRunner, {base: ServerDeps; side: ServerDeps}>();

function depsFor(deps: ServerDeps, runner: SmallGenerationRunner): ServerDeps {
  const cached = sideDepsOf.get(runner);
  if (cached && cached.base === deps) return cached.side;
  const side: ServerDeps = {
    ...deps,
    engine: runner.engine,
    pipeline: runner.createPipeline({queueTimeoutMs: deps.config.queueTimeout * 1000, logger: deps.logger}),
    template: runner.template,
    model: {id: runner.id, path: runner.path, sha256: runner.sha256, source: runner.source},
    agentMap: null,
  };
  sideDepsOf.set(runner, {base: deps, side});
  return side;
}

export async function serveSmallGeneration(deps: ServerDeps, runner: SideRunner, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  if (!(runner instanceof SmallGenerationRunner)) throw new ApiError("server_error", `internal error: ${runner.id} is not served by the small-generation runner`);
  const sideDeps = depsFor(deps, runner);
  const id = `chatcmpl-${randomBytes(12).toString("hex")}`;
  const abort = hangUpSignal(req, reply);
  const decoded = decodeSmallGeneration(runner.id, req.body, {requestId: id, signal: abort.signal, maxTokensCap: deps.config.maxTokensCap,
    schemas: deps.schemas, grammarEnabled: deps.config.grammar, strictTools: deps.config.strictTools, logger: deps.logger, counters: deps.counters});
  // Before the region is waited for, so an over-long prompt is a 400 naming the small model's limit.
  checkSmallPrompt(runner.id, sideDeps.pipeline.countPromptTokens(decoded.request), runner.contextSize);
  const who = {id, created: Math.floor(Date.now() / 1000), model: runner.id};
  await serveGeneration(sideDeps, req, reply, {
    route: "chat_small_generation",
    stream: decoded.stream,
    sessions: false,
    genRequest: decoded.request,
    collect: (events) => chatCompletionBody(who, events),
    encoder: () => chatStreamEncoder(who, decoded.includeUsage),
  });
  return undefined;
}
