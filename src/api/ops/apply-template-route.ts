// POST /apply-template (llama.cpp server's route): a chat-completions body in, `{prompt}` out, the exact text the
// chat route would hand the model for it (template, tools, thinking switch, continue_final_message...). The body
// goes through the chat dialect's own decode, so it gets the chat route's 400s; nothing is decoded by the model.

import {randomBytes} from "node:crypto";
import type {FastifyInstance} from "fastify";
import {ApiError} from "../../core/errors.ts";
import {newCounters} from "../../observability/counters.ts";
import {decodeChat, type ChatDecodeContext} from "../dialects/chat/decode.ts";
import type {ServerDeps} from "../deps.ts";

export function registerApplyTemplateRoute(app: FastifyInstance, deps: ServerDeps): void {
  app.post("/apply-template", async (req) => {
    // As the chat route: a side model's id there is the small generation model's own template, or refused naming its route.
    const model = deps.models.templated(req.body);
    const ctx: ChatDecodeContext = {
      requestId: `tmpl-${randomBytes(12).toString("hex")}`,
      maxTokensCap: deps.config.maxTokensCap,
      strictTools: deps.config.strictTools,
      logger: deps.logger,
      // Nothing is served: a strict tool that would run unenforced is not counted in /health and /metrics.
      counters: newCounters(),
      strictEligibility: (parameters) => model.handle.pipeline.strictEligibility(parameters),
      vision: model.handle.engine.media?.vision === true,
    };
    return {prompt: promptOf(await model.handle.pipeline.promptText(decodeChat(req.body, ctx, model).request))};
  });
}

/** A chat request always renders to text; null would be a token prompt, which the chat dialect never makes. */
function promptOf(text: string | null): string {
  if (text === null) throw new ApiError("server_error", "internal error: a chat request rendered to token ids instead of text");
  return text;
}
