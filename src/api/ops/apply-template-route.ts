// POST /apply-template (llama.cpp server's route): a chat-completions body in, `{prompt}` out, the exact text the
// chat route would hand the model for it (template, tools, thinking switch, continue_final_message...). The body
// goes through the chat dialect's own decode, so it gets the chat route's 400s; nothing is decoded by the model.

import {randomBytes} from "node:crypto";
import type {FastifyInstance} from "fastify";
import {ApiError} from "../../core/errors.ts";
import {newCounters} from "../../observability/counters.ts";
import {wrongRoute} from "../../side-models/side-models.ts";
import {SmallGenerationRunner} from "../../side-models/small-generation/runner.ts";
import {decodeChat, type ChatDecodeContext} from "../dialects/chat/decode.ts";
import type {ServerDeps} from "../deps.ts";
import {decodeSmallGeneration} from "../side/small-generation/decode.ts";

export function registerApplyTemplateRoute(app: FastifyInstance, deps: ServerDeps): void {
  app.post("/apply-template", async (req) => {
    const ctx: ChatDecodeContext = {
      requestId: `tmpl-${randomBytes(12).toString("hex")}`,
      signal: new AbortController().signal,
      maxTokensCap: deps.config.maxTokensCap,
      schemas: deps.schemas,
      grammarEnabled: deps.config.grammar,
      strictTools: deps.config.strictTools,
      logger: deps.logger,
      // Nothing is served: a strict tool that would run unenforced is not counted in /health and /metrics.
      counters: newCounters(),
    };
    // As the chat route: a side model's id there is the small generation model's own template, or refused naming its route.
    const runner = deps.side?.find((req.body as {model?: unknown} | null)?.model);
    if (runner) {
      if (!(runner instanceof SmallGenerationRunner)) throw wrongRoute(runner);
      const model = runner.handle({queueTimeoutMs: deps.config.queueTimeout * 1000, maxToolCalls: deps.config.maxToolCalls, logger: deps.logger});
      return {prompt: promptOf(model.pipeline.promptText(decodeSmallGeneration(runner.id, req.body, ctx).request))};
    }
    return {prompt: promptOf(deps.main.pipeline.promptText(decodeChat(req.body, ctx).request))};
  });
}

/** A chat request always renders to text; null would be a token prompt, which the chat dialect never makes. */
function promptOf(text: string | null): string {
  if (text === null) throw new ApiError("server_error", "internal error: a chat request rendered to token ids instead of text");
  return text;
}
