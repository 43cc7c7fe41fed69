// ApiError → Anthropic's error body, the one mapping for this dialect: HTTP error responses under
// /v1/messages (registered with the server, so the auth hook's 401 and unparsable JSON get it too) and
// the stream's `event: error` frame. The SDK picks its exception class from the status and reads
// `error.type` from this body; Claude Code reads an overflow from the message's exact wording.

import {randomBytes} from "node:crypto";
import type {FastifyReply} from "fastify";
import type {ApiError, ErrorKind} from "../../../core/errors.ts";

/** Anthropic's error types (docs.claude.com/en/api/errors); the SDK's ErrorType lacks request_too_large. */
export type AnthropicErrorType =
  | "invalid_request_error" | "authentication_error" | "permission_error" | "not_found_error" | "request_too_large"
  | "rate_limit_error" | "api_error" | "timeout_error" | "overloaded_error";

export interface AnthropicErrorBody {
  type: "error";
  error: {type: AnthropicErrorType; message: string};
  /** The same id as the `request-id` header (the SDK's `requestID`), as Anthropic's API sends it. */
  request_id: string;
}

/**
 * The id on this response's `request-id` header, set here when the request failed before its handler named
 * one (401, unparsable JSON, 413, an unknown path), so the header and the body's request_id always agree.
 */
export function requestIdOf(reply: FastifyReply): string {
  const set = reply.getHeader("request-id");
  if (typeof set === "string") return set;
  const id = `req_${randomBytes(12).toString("hex")}`;
  reply.header("request-id", id);
  return id;
}

const BY_KIND: Record<ErrorKind, AnthropicErrorType> = {
  invalid_request: "invalid_request_error",
  context_length: "invalid_request_error",
  unauthorized: "authentication_error",
  not_found: "not_found_error",
  payload_too_large: "request_too_large",
  unsupported_media: "invalid_request_error",
  unprocessable: "invalid_request_error",
  // Nobody reads a 499 (the client is gone); Anthropic has no type for it, and it is not the request's fault.
  client_closed: "api_error",
  server_error: "api_error",
  engine_busy: "overloaded_error",
  insufficient_memory: "overloaded_error",
  shutting_down: "overloaded_error",
  model_restarting: "overloaded_error",
  engine_unavailable: "api_error",
};

/** For a status with no kind of its own (defensive: every ApiError has a kind today). */
function byStatus(status: number): AnthropicErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503) return "overloaded_error";
  if (status === 504) return "timeout_error";
  return status >= 500 ? "api_error" : "invalid_request_error";
}

export function anthropicErrorType(err: Pick<ApiError, "kind" | "status">): AnthropicErrorType {
  return BY_KIND[err.kind] ?? byStatus(err.status);
}

/**
 * Anthropic's body has no `param`, so the field goes into the message when the message does not name it yet. An
 * overflow is worded as Anthropic words it, which Claude Code matches to compact the conversation and retry
 * (free text would only be shown to the user). The maximum is the longest prompt that leaves room for a reply,
 * so "N > M" holds for every refused prompt.
 */
export function anthropicErrorBody(err: ApiError, requestId: string): AnthropicErrorBody {
  const message = err.overflow
    ? `prompt is too long: ${err.overflow.promptTokens} tokens > ${err.overflow.maxPromptTokens} maximum`
    : err.param && !err.message.includes(err.param) ? `${err.param}: ${err.message}` : err.message;
  return {type: "error", error: {type: anthropicErrorType(err), message}, request_id: requestId};
}
