// The model router and the reply watchers, wired from the side models the server loaded. It sits above the
// dialects and the side routes and is the only place that knows both: a dialect asks the router what serves a
// body's `model` (api/model-router.ts), and the chat route asks the watchers whether to watch a reply.

import type {FastifyRequest} from "fastify";
import type {GenerationRequest} from "../../core/generation.ts";
import {DeciderRunner} from "../../side-models/decider/runner.ts";
import {wrongRoute} from "../../side-models/side-models.ts";
import {SmallGenerationRunner} from "../../side-models/small-generation/runner.ts";
import type {ServerDeps} from "../deps.ts";
import {mainModel, type ChatTarget, type ChatWatcher, type ChatWatchers, type ModelRouter, type ServedModel} from "../model-router.ts";
import {decisionAnswerer} from "../side/decide/chat-route.ts";
import {openChatGuard} from "../side/guard/index.ts";
import {smallGenerationModel} from "../side/small-generation/served.ts";

const modelOf = (body: unknown): unknown => (body as {model?: unknown} | null)?.model;

/** `deps` without the router and the watchers, which are built from it. */
export function buildModelRouter(deps: Omit<ServerDeps, "models" | "watchers">): ModelRouter {
  const main = mainModel(deps.main);
  const opts = {queueTimeoutMs: deps.config.queueTimeout * 1000, maxToolCalls: deps.config.maxToolCalls, logger: deps.logger};
  return {
    chat(body: unknown): ChatTarget {
      const runner = deps.side?.find(modelOf(body));
      if (!runner) return {kind: "generate", model: main};
      if (runner instanceof DeciderRunner) return {kind: "answer", answer: decisionAnswerer(deps, runner)};
      if (runner instanceof SmallGenerationRunner) return {kind: "generate", model: smallGenerationModel(runner, opts)};
      throw wrongRoute(runner);
    },
    templated(body: unknown): ServedModel {
      const runner = deps.side?.find(modelOf(body));
      if (!runner) return main;
      if (runner instanceof SmallGenerationRunner) return smallGenerationModel(runner, opts);
      throw wrongRoute(runner);
    },
    mainOnly(body: unknown): ServedModel {
      const runner = deps.side?.find(modelOf(body));
      if (runner) throw wrongRoute(runner);
      return main;
    },
  };
}

/** The streaming guard. Always wired: without a guard model loaded, a request that asks for it gets its 400 here. */
export function buildChatWatchers(deps: Omit<ServerDeps, "models" | "watchers">): ChatWatchers {
  return {
    open: (req: FastifyRequest, request: GenerationRequest, who): ChatWatcher | null =>
      openChatGuard(deps, req, (req.body as {guard?: unknown} | null)?.guard, request, who),
  };
}
