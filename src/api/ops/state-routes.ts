// Server state: /health (the authoritative account of what this build supports), /props, /slots, /v1/models.

import type {FastifyInstance} from "fastify";
import {REFUSED_KEYWORDS, UNENFORCED_KEYWORDS} from "../../grammar/index.ts";
import {describeRope, MAX_WHITESPACE_TOKENS_IN_A_ROW, type EngineInfo} from "../../engine/index.ts";
import {MAX_PREAMBLE_TOKENS} from "../../pipeline/steering.ts";
import {toolSyntaxOf} from "../../pipeline/reply-plan.ts";
import {MAX_STRICT_PARAMETERS, MAX_STRICT_TOOLS} from "../fields/tools.ts";
import {BUDGET_ALIASES, DEFAULT_SAMPLING} from "../fields/common.ts";
import type {ServerDeps} from "../deps.ts";
import type {SideModels} from "../../side-models/side-models.ts";
import {ROUTE_OF_KIND} from "../../side-models/registry.ts";
import type {ChatTemplate} from "../../templates/chat-template.ts";
import {registeredRoutes} from "../registered-routes.ts";

/** Request fields the generation routes of this build read (the rest are accepted and ignored). */
export const SUPPORTED_FIELDS = {
  chat: ["messages", "model", ...BUDGET_ALIASES, "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repeat_penalty", "repeat_last_n", "seed", "stop", "stop_token_ids", "stream", "stream_options.include_usage", "return_progress", "n (1)",
    "continue_final_message", "add_generation_prompt", "chat_template_kwargs", "reasoning_effort", "logprobs", "top_logprobs (<= 20)",
    "response_format (json_schema, json_object)"],
  completions: ["prompt", "model", ...BUDGET_ALIASES, "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
    "repeat_penalty", "repeat_last_n", "seed", "stop", "stop_token_ids", "stream", "stream_options.include_usage", "return_progress", "n (1)",
    "logprobs (0 to 20 alternatives)"],
  responses: ["input (string | message, function_call, function_call_output, reasoning items)", "instructions", "model", ...BUDGET_ALIASES,
    "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repeat_penalty", "repeat_last_n", "seed", "stream",
    "tools (function, namespace)", "tool_choice (auto, none, required, function, allowed_tools)", "parallel_tool_calls",
    "text.format (json_schema, json_object, text)", "reasoning.effort (none turns thinking off)", "reasoning.summary",
    "previous_response_id (history in input)"],
  messages: ["model (not checked)", "messages (text, tool_use, tool_result, thinking via signature, redacted_thinking)", "system",
    "max_tokens (required; above the cap runs with the cap)", "stop_sequences", "temperature", "top_p", "top_k", "min_p", "seed", "stream",
    "thinking (enabled + budget_tokens, adaptive, disabled; display omitted)", "output_config.effort (none turns thinking off)",
    "output_config.format (json_schema)", "tools (custom; vendor server tools dropped)", "tool_choice (auto, any, tool, none, disable_parallel_tool_use)",
    "metadata"],
};

export function registerStateRoutes(app: FastifyInstance, deps: ServerDeps): void {
  const {config} = deps;
  const {engine, template, identity: model} = deps.main;

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
        decode_threads: engine.info.decodeThreads,
        flash_attention: engine.info.flashAttention,
        speculation: {mode: engine.info.speculation.mode, active: engine.info.speculation.active,
          step_cost: engine.info.speculation.stepCost === null ? null : Number(engine.info.speculation.stepCost.toFixed(3)),
          reason: engine.info.speculation.reason},
        ...(engine.info.remote ? {remote: {...engine.info.remote, replicas: st.replicas ?? []}} : {}),
      },
      context: contextHealth(engine.info),
      supported_fields: SUPPORTED_FIELDS,
      routes: ["POST /v1/chat/completions", "POST /v1/completions", "POST /v1/responses", "POST /v1/responses/input_tokens", "POST /v1/messages",
        "POST /v1/messages/count_tokens", "GET /v1/models", "GET /health", "GET /props", "GET /slots",
        "GET /cache", "GET /metrics", "POST /tokenize", "POST /detokenize", "POST /apply-template", "GET /svc/handles", "DELETE /svc/handles/{name}"],
      prompt_cache: {
        enabled: config.promptCache,
        reuse_match: engine.info.reuseMatch.match,
        reuse_match_reason: engine.info.reuseMatch.reason,
        resume_points: engine.info.reuseMatch.match === "prefix"
          ? "anywhere in a shared prefix: a replica reuses its slot's KV up to the first differing token; a reply is reusable as decoded"
          : engine.info.reuseMatch.match === "rows"
          ? "anywhere in a shared prefix (a tiled prompt run re-evaluates at least 64 rows); " +
            "a reply is reusable as decoded, so the next turn resumes after it at once"
          : "pieces end at multiples of prompt_piece and where each message's text starts and ends (the end of the system message included); " +
            "replies are re-evaluated in pieces once the engine is idle, so the next turn resumes after them",
        greedy_output: engine.info.remote
          ? "not promised byte-identical across replicas: each replica batches and caches on its own (see engine.remote.limits)"
          : "byte-identical with or without the cache, alone or batched",
        disk_tier: config.cacheDir ? {dir: config.cacheDir, budget_mb: config.cacheDiskMb} : null,
        sessions: config.fork ? {max_handles: config.forkHandles, ttl_s: config.forkTtl, persistent: config.cacheDir !== undefined} : null,
      },
      structured_output: {
        enabled: config.grammar,
        response_format: ["json_schema", "json_object"],
        enforced_keywords: ["type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength",
          "enum", "const", "anyOf", "oneOf (as anyOf)", "$ref", "$defs"],
        unenforced_keywords: UNENFORCED_KEYWORDS,
        refused_keywords: REFUSED_KEYWORDS,
        whitespace_tokens_in_a_row: MAX_WHITESPACE_TOKENS_IN_A_ROW,
        with_logprobs: "refused",
        // The spec's "Thinking and tools under a schema".
        under_a_schema: {
          reasoning: "free; the JSON starts after the block closes",
          with_tools: config.schemaEscape
            ? `an object schema binds from the first "{" (text before it dropped) unless a tool call opens first; ` +
              `the free preamble is capped at half the budget left after thinking, at most ${MAX_PREAMBLE_TOKENS} tokens`
            : "the schema binds from the first token (SVC_SCHEMA_ESCAPE=off)",
          schema_escape: config.schemaEscape,
        },
        tool_call_syntax: toolSyntaxOf(template),
        strict_tools: {
          enabled: config.strictTools,
          rules: [
            "a tool call names one of the request's tools",
            "a strict tool's arguments match its parameters schema: the enforced keywords, every required parameter, " +
              "no undeclared parameter (absent additionalProperties counts as false); parameters in any order",
            "a tool without strict is called as before",
            "parallel_tool_calls: false allows one call",
            "a call inside the reasoning block is not held to a schema",
            "a string argument cannot contain the line </parameter>",
            "pattern and format are accepted and not enforced inside a tool schema",
          ],
          max_parameters: MAX_STRICT_PARAMETERS,
          max_tools: MAX_STRICT_TOOLS,
          served_unenforced_when: ["the schema uses a refused keyword", "the schema allows extra parameters at the top level",
            `the tool has more than ${MAX_STRICT_PARAMETERS} parameters`, `the request has images, logprobs, or more than ${MAX_STRICT_TOOLS} tools`,
            "the model family's call syntax cannot write a parameter name or any listed value the schema allows"],
          unenforced_total: deps.counters.strictToolsUnenforced,
        },
      },
      token_budget_aliases: [...BUDGET_ALIASES],
      max_tokens_default: config.maxTokensDefault > 0 ? config.maxTokensDefault : null,
      max_tokens_cap: config.maxTokensCap,
      chat_template: chatTemplateHealth(template, engine.info.chatTemplate !== null),
      stop_ids: engine.info.eogTokenIds,
      queued: st.queued,
      longest_wait_s: Math.round(st.longestWaitS * 1000) / 1000,
      uptime_s: Math.round((Date.now() - deps.startedAt.getTime()) / 1000),
      ...(deps.side ? {side_models: sideModelsHealth(deps.side)} : {}),
      // One entry per supervised child process (side-models/child-supervisor.ts); empty when none runs.
      children: [...deps.main.children?.() ?? [], ...deps.side?.children.list() ?? []],
      limits: connectionLimits(app, deps),
    };
  });

  // Plain numbers the engine keeps: reading them never waits on a decode.
  app.get("/cache", async () => engine.cacheReport());

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
    // The template in use: SVC_CHAT_TEMPLATE's file when set, else the GGUF's (shown even when it does not parse).
    chat_template: template?.source ?? engine.info.chatTemplate ?? "",
    bos_token: engine.info.bosText,
    eos_token: engine.info.eosText,
    modalities: {vision: engine.media?.vision === true, audio: false},
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
    const side = (deps.side?.list() ?? []).map((r) => ({...entry, id: r.id, owned_by: "svc-side", display_name: r.id, kind: r.kind}));
    const data = [entry, ...side];
    return {object: "list", data, has_more: false, first_id: data[0]!.id, last_id: data[data.length - 1]!.id};
  };
  app.get("/v1/models", models);
  app.get("/models", models);
}

/**
 * Which chat template the generation routes use: `source` is "gguf" (the model file's own) or the path of
 * SVC_CHAT_TEMPLATE's file; `path` is the older name of where it came from (the template's origin), kept for clients
 * that read it.
 */
function chatTemplateHealth(template: ChatTemplate | null, ggufHasOne: boolean) {
  if (!template) {
    return {source: ggufHasOne ? "gguf" : null, path: null, sha256: null, engine: null, family: null,
      check: ggufHasOne
        ? "the model's chat template does not parse (see the start log); set SVC_CHAT_TEMPLATE to a template file to replace it"
        : "the model file has no chat template; set SVC_CHAT_TEMPLATE to a template file to supply one"};
  }
  return {
    source: template.origin.startsWith("gguf:") ? "gguf" : template.origin,
    path: template.origin,
    sha256: template.sha256,
    check: template.check,
    engine: template.engine,
    family: {id: template.family.id, name: template.family.name, derivation: derivationHealth(template)},
  };
}

/**
 * The context against the model's training length (SVC_CTX_SIZE may pass it, as llama-server's `-c`): each
 * region reserves `per_region` positions, so the context holds `total`; `rope_scaling` is what llama.cpp applies
 * (the GGUF's own, see engine/context-plan.ts).
 */
function contextHealth(info: EngineInfo) {
  const rope = info.ropeScaling;
  return {
    training_length: info.trainContextSize,
    per_region: info.contextSize,
    regions: info.regions,
    total: info.contextSize * info.regions,
    beyond_training_length: info.contextSize > info.trainContextSize,
    rope_scaling: {type: rope.type, factor: rope.factor, original_context_length: rope.originalContextLength, freq_base: rope.freqBase,
      applied: describeRope(rope)},
  };
}

/** The side models and their executor, for /health. */
function sideModelsHealth(side: SideModels) {
  const st = side.status();
  return {
    executor: "CPU, in this process, one pass at a time (the spec's NPU host requirements do not apply)",
    models: side.list().map((r) => ({id: r.id, kind: r.kind, route: ROUTE_OF_KIND[r.kind], path: r.path, ...r.describe()})),
    running: st.running,
    queued: st.queued,
    waiting_in_server: st.waitingInServer,
    longest_wait_s: Math.round(st.longestWaitS * 1000) / 1000,
    passes: st.passes,
    refused_busy: st.refused,
  };
}

/**
 * What a deployment can rely on against slow or greedy clients (SVC_HEADERS_TIMEOUT_S, SVC_BODY_TIMEOUT_S,
 * SVC_MAX_CONNECTIONS, SVC_SHUTDOWN_GRACE_S) and each body-taking route's limit in bytes (413 past it).
 */
function connectionLimits(app: FastifyInstance, deps: ServerDeps) {
  const fallback = Math.floor(deps.config.bodyLimitMb * 1024 * 1024);
  const bodies = registeredRoutes(app).filter((r) => r.method === "POST")
    .map((r) => [`POST ${r.url}`, r.bodyLimit ?? fallback] as const);
  return {
    headers_timeout_s: deps.config.headersTimeout,
    body_timeout_s: deps.config.bodyTimeout,
    max_connections: deps.config.maxConnections,
    shutdown_grace_s: deps.config.shutdownGrace,
    body_bytes: Object.fromEntries(bodies.sort(([a], [b]) => a.localeCompare(b))),
  };
}

/**
 * For a template no family file matches (family `derived` or `generic`): the call syntax read from its renders, or
 * why none could be read; null when a family file matched or the template renders no tools.
 */
function derivationHealth(template: ChatTemplate) {
  const d = template.derivation;
  if (d === null) return null;
  return d.syntax ? {markers: d.syntax, parallel_calls: d.parallel} : {reason: d.reason};
}
