// The OpenAI-style error shape, built in exactly one place. (The Messages-style route will map the same
// ApiError to Anthropic's shape in its own dialect.)

import {ApiError} from "../core/errors.ts";
import {EngineBusyError, EngineCancelledError, EngineMemoryError, EngineRestartingError, EngineUnavailableError} from "../engine/index.ts";

export interface OpenAiErrorBody {
  error: {message: string; type: string; param: string | null; code: string | null};
}

/**
 * An overflow opens with OpenAI's own wording ("This model's maximum context length is N tokens. However, your
 * messages resulted in M tokens."), which clients such as LangChain and LiteLLM match to tell an overflow from
 * other 400s, then says what to change here.
 */
export function openAiErrorBody(err: ApiError): OpenAiErrorBody {
  const message = err.overflow
    ? `This model's maximum context length is ${err.overflow.maxPromptTokens + 1} tokens. However, your ${err.param ?? "prompt"} resulted in ` +
      `${err.overflow.promptTokens} tokens, leaving no room for a reply. Please reduce the length of the ${err.param ?? "prompt"}, ` +
      "or start the server with a larger SVC_CTX_SIZE."
    : err.message;
  return {error: {message, type: err.type, param: err.param, code: err.code}};
}

/**
 * Turns whatever was thrown into an ApiError, the one place where the engine's own errors get their statuses:
 * busy → 503 engine_busy with Retry-After, cancelled → 499, out of memory → 503 insufficient_memory with
 * Retry-After, a side model's child process lost or restarting → 503 model_restarting with Retry-After, a remote replica lost
 * mid-reply → 502 engine_unavailable. Unknown failures become 500 with their message.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof EngineBusyError) return new ApiError("engine_busy", err.message, {headers: {"Retry-After": String(err.retryAfterS)}});
  if (err instanceof EngineCancelledError) return new ApiError("client_closed", err.message);
  if (err instanceof EngineMemoryError) return new ApiError("insufficient_memory", err.message, {headers: {"Retry-After": String(err.retryAfterS)}});
  if (err instanceof EngineRestartingError) return new ApiError("model_restarting", err.message, {headers: {"Retry-After": String(err.retryAfterS)}});
  if (err instanceof EngineUnavailableError) return new ApiError("engine_unavailable", err.message);
  const e = err as {statusCode?: number; code?: string; message?: string};
  switch (e?.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError("payload_too_large", "the request body is larger than this server takes (SVC_BODY_LIMIT_MB)");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ApiError("invalid_request", "the request body is empty; send a JSON object");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("unsupported_media", "send the body as JSON (Content-Type: application/json)");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError("invalid_request", "the Content-Length header does not match the body");
  }
  if (typeof e?.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError("invalid_request", e.message ?? "bad request");
  }
  return new ApiError("server_error", `internal error: ${e?.message ?? String(err)}`);
}
