// The one error catalogue. Everything that refuses a request throws an ApiError built here; each dialect
// maps it to its own wire shape in exactly one place (the OpenAI shape lives in api/error-body.ts).

export type ErrorKind =
  | "invalid_request"     // 400: the body breaks a rule; the message names the field and the rule
  | "context_length"      // 400: the prompt (plus room to answer) does not fit the context
  | "unauthorized"        // 401: a key is required and none (or a wrong one) was sent
  | "not_found"           // 404: unknown route or resource
  | "payload_too_large"   // 413: body over the size limit
  | "unsupported_media"   // 415: body is not JSON
  | "unprocessable"       // 422: a malformed POST /v1/decide body (the spec's status for that route)
  | "client_closed"       // 499: the client hung up; the work was cancelled
  | "server_error"        // 500: our own failure; the message says what
  | "engine_busy"         // 503: could not start within SVC_QUEUE_TIMEOUT
  | "insufficient_memory" // 503: a side-model request needs memory the host does not have (the server keeps running)
  | "shutting_down"       // 503: the server is stopping; the request was cancelled after the shutdown grace
  | "model_restarting"    // 503: a side model's child process died under the request or is restarting; retry after Retry-After
  | "engine_unavailable"; // 502: a remote engine replica stopped answering mid-reply (the next request goes to another)

export interface Overflow {
  promptTokens: number;
  maxPromptTokens: number;
}

interface KindInfo {status: number; type: string; code: string | null}

const KINDS: Record<ErrorKind, KindInfo> = {
  invalid_request: {status: 400, type: "invalid_request_error", code: null},
  context_length: {status: 400, type: "invalid_request_error", code: "context_length_exceeded"},
  unauthorized: {status: 401, type: "authentication_error", code: "invalid_api_key"},
  not_found: {status: 404, type: "not_found_error", code: null},
  payload_too_large: {status: 413, type: "invalid_request_error", code: "request_too_large"},
  unsupported_media: {status: 415, type: "invalid_request_error", code: "unsupported_media_type"},
  unprocessable: {status: 422, type: "invalid_request_error", code: null},
  client_closed: {status: 499, type: "client_closed_request", code: "client_closed"},
  server_error: {status: 500, type: "server_error", code: null},
  engine_busy: {status: 503, type: "server_error", code: "engine_busy"},
  insufficient_memory: {status: 503, type: "server_error", code: "insufficient_memory"},
  shutting_down: {status: 503, type: "server_error", code: "server_shutting_down"},
  model_restarting: {status: 503, type: "server_error", code: "model_restarting"},
  engine_unavailable: {status: 502, type: "server_error", code: "engine_unavailable"},
};

export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  /** The request field the error is about, as a dotted path (OpenAI's `param`). */
  readonly param: string | null;
  /** Extra response headers (Retry-After on engine_busy). */
  readonly headers: Record<string, string>;
  /**
   * context_length: the prompt's length and the longest prompt that fits, as numbers, for dialects whose
   * clients read them from a fixed wording (Anthropic's "prompt is too long: N tokens > M maximum").
   */
  readonly overflow: Overflow | null;

  constructor(kind: ErrorKind, message: string, opts: {param?: string | null; headers?: Record<string, string>; overflow?: Overflow} = {}) {
    super(message);
    const info = KINDS[kind];
    this.kind = kind;
    this.status = info.status;
    this.type = info.type;
    this.code = info.code;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
    this.overflow = opts.overflow ?? null;
  }
}

/** 400 naming the field: `invalidField("messages[2].role", "must be one of system, user, ...")`. */
export function invalidField(param: string, rule: string): ApiError {
  return new ApiError("invalid_request", `${param}: ${rule}`, {param});
}

/** 422 naming the field, for routes whose spec answers a malformed body with 422 (POST /v1/decide). */
export function unprocessableField(param: string, rule: string): ApiError {
  return new ApiError("unprocessable", `${param}: ${rule}`, {param});
}

export function invalidRequest(message: string, param?: string): ApiError {
  return new ApiError("invalid_request", message, {param});
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}
