// Server state: /health (the authoritative account of what this build supports), /props, /slots, /v1/models.

import type {FastifyInstance} from "fastify";
import {REFUSED_KEYWORDS, UNENFORCED_KEYWORDS} from "../../grammar/index.ts";
import {MAX_WHITESPACE_TOKENS_IN_A_ROW} from "../../engine/engine.ts";
import {BUDGET_ALIASES, DEFAULT_SAMPLING} from "../fields/common.ts";
import type {ServerDeps} from "../deps.ts";

/** Request fields the generation routes of this build read (the rest are accepted and ignored). */
export const SUPPORTED_FIELDS = {
  chat: ["messages", "model", ...BUDGET_ALIASES, "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repeat_penalty", "repeat_last_n", "seed", "stop", "stop_token_ids", "stream", "stream_options.include_usage", "return_progress", "n (1)",
    "continue_final_message", "add_generation_prompt", "chat_template_kwargs", "reasoning_effort", "logprobs", "top_logprobs (<= 20)",
    "response_format (json_schema, json_object)"],
  completions: ["prompt", "model", ...BUDGET_ALIASES, "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repeat_penalty", "repeat_last_n", "seed", "stop", "stop_token_ids", "stream", "stream_options.include_usage", "return_progress", "n (1)",
    "logprobs (0 to 20 alternatives)"],
};

export function registerStateRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const {engine, config, model, template} = deps;

  app.get("/health", async () => {
    const st = engine.status();
    return {
      status: st.up ? "ok" : "down",
      version: {svc: deps.version, engine: engine.info.version},
      model: {id: model.id, source: model.source, path: model.path, sha256: model.sha256, architecture: engine.info.architecture},
      engine: {
        up: st.up,
        regions: st.regions.length,
        busy_regions: st.regions.filter((r) => r.state === "busy").length,
        context_size: engine.info.contextSize,
        prompt_piece: engine.info.promptPiece,
        prompt_cache: config.promptCache,
        step_waits_timed_out: st.stepWaitsTimedOut,
        threads: engine.info.threads,
      },
      supported_fields: SUPPORTED_FIELDS,
      routes: ["POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "GET /health", "GET /props", "GET /slots",
        "POST /tokenize", "POST /detokenize"],
      structured_output: {
        enabled: config.grammar,
        response_format: ["json_schema", "json_object"],
        enforced_keywords: ["type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength",
          "enum", "const", "anyOf", "oneOf (as anyOf)", "$ref", "$defs"],
        unenforced_keywords: UNENFORCED_KEYWORDS,
        refused_keywords: REFUSED_KEYWORDS,
        whitespace_tokens_in_a_row: MAX_WHITESPACE_TOKENS_IN_A_ROW,
        with_logprobs: "refused",
        thinking_and_tools_under_a_schema: "not in this build",
        strict_tools: {enforced: false, reason: "tool calling is not in this build"},
      },
      token_budget_aliases: [...BUDGET_ALIASES],
      max_tokens_default: config.maxTokensDefault > 0 ? config.maxTokensDefault : null,
      max_tokens_cap: config.maxTokensCap,
      chat_template: template
        ? {path: template.origin, sha256: template.sha256, check: template.check}
        : {path: null, sha256: null, check: "the model file has no chat template"},
      stop_ids: engine.info.eogTokenIds,
      queued: st.queued,
      longest_wait_s: Math.round(st.longestWaitS * 1000) / 1000,
      uptime_s: Math.round((Date.now() - deps.startedAt.getTime()) / 1000),
    };
  });

  app.get("/props", async () => ({
    total_slots: engine.info.regions,
    default_generation_settings: {
      n_ctx: engine.info.contextSize,
      params: {
        n_predict: config.maxTokensDefault > 0 ? config.maxTokensDefault : -1,
        temperature: DEFAULT_SAMPLING.temperature,
        top_k: DEFAULT_SAMPLING.topK,
        top_p: DEFAULT_SAMPLING.topP,
        min_p: DEFAULT_SAMPLING.minP,
        presence_penalty: DEFAULT_SAMPLING.presencePenalty,
        frequency_penalty: DEFAULT_SAMPLING.frequencyPenalty,
        repeat_penalty: DEFAULT_SAMPLING.repeatPenalty,
        repeat_last_n: DEFAULT_SAMPLING.repeatLastN,
      },
    },
    model_alias: model.id,
    model_path: model.path,
    chat_template: engine.info.chatTemplate ?? "",
    bos_token: engine.info.bosText,
    eos_token: engine.info.eosText,
    modalities: {vision: false, audio: false},
    build_info: `svc ${deps.version}; ${engine.info.version}`,
  }));

  app.get("/slots", async () =>
    engine.status().regions.map((r) => ({id: r.id, n_ctx: r.n_ctx, is_processing: r.state === "busy", n_past: r.n_past})));

  const models = async () => {
    const created = Math.floor(deps.startedAt.getTime() / 1000);
    const entry = {
      id: model.id,
      object: "model",
      created,
      owned_by: "svc",
      // The Messages-style API's model fields, so the Anthropic SDK's models.list() reads the same listing.
      type: "model",
      display_name: model.id,
      created_at: deps.startedAt.toISOString(),
    };
    return {object: "list", data: [entry], has_more: false, first_id: model.id, last_id: model.id};
  };
  app.get("/v1/models", models);
  app.get("/models", models);
}
