// The response shapes of /openapi.json, as JSON Schema 2020-12 (OpenAPI 3.1's dialect). Written by hand from the
// encoders (dialects/*/encode.ts, ops/*.ts): the replies are built there from SDK types, not from zod, so there is no
// schema to derive them from. Each names the fields a client relies on and leaves the rest open (additional
// properties allowed), so adding a field to a reply never breaks the contract, while dropping or retyping one does.

export type JsonSchema = Record<string, unknown>;

const str = {type: "string"};
const int = {type: "integer"};
const num = {type: "number"};
const bool = {type: "boolean"};
const nullable = (s: JsonSchema): JsonSchema => ({anyOf: [s, {type: "null"}]});
const obj = (properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): JsonSchema =>
  ({type: "object", properties, required});
const ref = (name: string): JsonSchema => ({$ref: `#/components/schemas/${name}`});

const usageOpenAi = obj({prompt_tokens: int, completion_tokens: int, total_tokens: int});
/** llama.cpp-style timings every generation reply carries (see core/generation.ts Timings). */
const timings = {type: "object", additionalProperties: true};

const toolCall = obj({id: str, type: {const: "function"}, function: obj({name: str, arguments: str})});

/** Named shapes: each goes in components.schemas and is referenced by name from the routes. */
export const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
  OpenAiError: {
    ...obj({error: obj({message: str, type: str, param: nullable(str), code: nullable(str)})}),
    description: "Every error outside the Messages routes (src/api/error-body.ts).",
  },
  AnthropicError: {
    ...obj({type: {const: "error"}, error: obj({type: str, message: str}), request_id: str}),
    description: "Every error under /v1/messages and /messages, 401 and unparsable JSON included (dialects/messages/errors.ts).",
  },
  ChatCompletion: obj({
    id: str, object: {const: "chat.completion"}, created: int, model: str,
    choices: {type: "array", items: obj({
      index: int,
      message: obj({role: {const: "assistant"}, content: nullable(str), tool_calls: {type: "array", items: toolCall},
        reasoning_content: str}, ["role", "content"]),
      logprobs: nullable({type: "object"}),
      finish_reason: {enum: ["stop", "length", "tool_calls", "content_filter"]},
    })},
    usage: usageOpenAi,
    timings,
  }, ["id", "object", "created", "model", "choices", "usage"]),
  Completion: obj({
    id: str, object: {const: "text_completion"}, created: int, model: str,
    choices: {type: "array", items: obj({index: int, text: str, logprobs: nullable({type: "object"}), finish_reason: nullable(str)})},
    usage: usageOpenAi,
    timings,
  }, ["id", "object", "created", "model", "choices", "usage"]),
  Response: obj({
    id: str, object: {const: "response"}, created_at: int, completed_at: nullable(int),
    status: {enum: ["completed", "incomplete", "in_progress", "failed", "cancelled", "queued"]},
    model: str,
    output: {type: "array", items: obj({type: str}, ["type"])},
    error: nullable({type: "object"}),
    incomplete_details: nullable({type: "object"}),
    usage: nullable(obj({input_tokens: int, output_tokens: int, total_tokens: int})),
    store: bool,
    timings,
  }, ["id", "object", "created_at", "status", "model", "output", "usage"]),
  Message: obj({
    id: str, type: {const: "message"}, role: {const: "assistant"}, model: str,
    content: {type: "array", items: obj({type: {enum: ["text", "thinking", "redacted_thinking", "tool_use"]}}, ["type"])},
    stop_reason: nullable({enum: ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]}),
    stop_sequence: nullable(str),
    usage: obj({input_tokens: int, output_tokens: int}),
    timings,
  }, ["id", "type", "role", "model", "content", "stop_reason", "usage"]),
  Health: obj({status: {enum: ["ok", "down"]}, version: {type: "object"}, model: {type: "object"}, engine: {type: "object"},
    children: {type: "array", description: "One entry per supervised child process (a side model's engine)", items: obj({name: str,
      state: {enum: ["starting", "ready", "restarting", "stopped", "failed"]}, pid: nullable(int), restarts: int, crashes: int,
      last_exit: nullable(str), last_restart_at: nullable(str)})},
    limits: obj({headers_timeout_s: {type: "number"}, body_timeout_s: {type: "number"}, max_connections: int, shutdown_grace_s: {type: "number"},
      body_bytes: {type: "object", description: "Each body-taking route's limit in bytes (413 past it)", additionalProperties: int}},
    ["headers_timeout_s", "body_timeout_s", "max_connections", "shutdown_grace_s", "body_bytes"])},
    ["status", "children", "limits"]),
  ModelList: obj({object: {const: "list"}, data: {type: "array", items: obj({id: str, object: {const: "model"}}, ["id", "object"])}},
    ["object", "data"]),
  Slots: {type: "array", items: obj({id: int, n_ctx: int, is_processing: bool, n_past: int})},
  Tokens: obj({tokens: {type: "array", items: {anyOf: [int, obj({id: int, piece: {anyOf: [str, {type: "array", items: int}]}})]}}}),
  Detokenized: obj({content: str}),
  Prompt: obj({prompt: str}),
  InputTokens: obj({input_tokens: int}),
  HandleList: obj({object: {const: "list"}, enabled: bool, max: nullable(int), data: {type: "array"}}),
  HandleReleased: obj({name: str, released: {const: true}, pending: bool}),
  EmbeddingList: obj({object: {const: "list"}, data: {type: "array", items: obj({object: {const: "embedding"}, index: int,
    embedding: {anyOf: [{type: "array", items: num}, str]}})}, model: str}, ["object", "data", "model"]),
  SseEvent: {
    ...obj({event: str, data: str, id: str, retry: int}, ["data"]),
    description: "One server-sent event of a streamed reply: `data` is a JSON chunk of the route's stream (or [DONE] on the OpenAI routes); " +
      "an error mid-stream is an event whose data is the route's error body.",
  },
  AnyObject: {type: "object"},
  Text: {type: "string"},
};

export {ref};
