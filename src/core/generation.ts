// The internal vocabulary between dialects and the pipeline. A dialect decodes its body into a
// GenerationRequest and encodes GenerationEvents back into its wire format; nothing below the
// dialects knows about HTTP bodies, and nothing above the pipeline knows about tokens.

import type {MediaInput} from "./media.ts";
import type {TemplateMessage} from "./messages.ts";

export interface SamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** 0 = whole vocabulary. */
  topK: number;
  topP: number;
  minP: number;
  /** Always set: a request without a seed gets a random one. */
  seed: number;
  presencePenalty: number;
  frequencyPenalty: number;
  /** Multiplicative (llama.cpp style); 1 = off. */
  repeatPenalty: number;
  /** Generated tokens the penalties look back over; -1 = all of them. */
  repeatLastN: number;
}

export type PromptSpec =
  | {
      kind: "chat";
      messages: TemplateMessage[];
      addGenerationPrompt: boolean;
      continueFinalMessage: boolean;
      enableThinking?: boolean;
      /** The request's reasoning effort (none, minimal, low, medium, high, xhigh), for templates that read one. */
      reasoningEffort?: string;
      templateKwargs?: Record<string, unknown>;
    }
  /** Raw text, seen by the model exactly as sent: special markers are parsed as special tokens. */
  | {kind: "text"; text: string}
  | {kind: "tokens"; tokens: number[]};

/** A structured answer: any JSON object, or JSON following a schema. */
export type ResponseFormat = {kind: "json_object"} | {kind: "json_schema"; schema: unknown};

/** A function tool offered to the model (OpenAI `tools[].function`, or the other routes' equivalents). */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON schema of the arguments. */
  parameters?: unknown;
  /** The client asked for strict arguments. */
  strict: boolean;
  /** Strict and enforceable here (see the spec's "Strict tools" rule 5): arguments are bound to the schema. */
  enforced: boolean;
  /**
   * The tool as the chat template is given it: OpenAI's function-tool entry, exactly as the client sent it on the
   * chat route, built from the route's own shape on the others. The pipeline hands these to the template.
   */
  templateEntry: unknown;
}

export type ToolChoice = {kind: "auto"} | {kind: "none"} | {kind: "required"} | {kind: "named"; name: string};

export interface ToolsRequest {
  tools: ToolDefinition[];
  choice: ToolChoice;
  /** false: at most one call. */
  parallel: boolean;
  /** The request's own bound on the reply's calls (Responses `max_tool_calls`); the server's cap still applies. */
  maxCalls?: number;
}

/**
 * What a request asked for, as its dialect decoded it from the body: nothing else writes it. What the transport
 * knows about the request (its id, the client's hang-up, streaming, session names) travels beside it as a
 * RequestTransport.
 */
export interface GenerationRequest {
  prompt: PromptSpec;
  /**
   * The body field the prompt came from, as the dialect names it (chat and Messages `messages`, Responses
   * `input`, completions `prompt`): refusals raised below the dialects about the prompt as a whole name it.
   */
  promptField: string;
  /** null: until the region is full (or SVC_MAX_TOKENS_DEFAULT when set). */
  maxTokens: number | null;
  sampling: SamplingParams;
  stop: string[];
  stopTokenIds: number[];
  /** Send prompt progress events before the first token. */
  wantProgress: boolean;
  /** Log probability of each generated token under the model's own distribution, with `top` alternatives. */
  logprobs: {top: number} | null;
  /**
   * The answer must be JSON: any object, or one following a schema (carried as the client sent it; the pipeline
   * compiles it beside the tool grammars). `field` is how the route names it in a refusal. null = free text.
   */
  responseFormat: {format: ResponseFormat; field: string} | null;
  /**
   * Thinking tokens allowed before the pipeline closes the reasoning block itself (the Messages-style
   * route's `thinking.budget_tokens`); null or absent = no limit beyond max_tokens.
   */
  reasoningBudget?: number | null;
  /** Tools offered on this request; null = none. */
  tools?: ToolsRequest | null;
  /**
   * Pictures, in the order of their markers in the messages' text (core/media.ts: mediaMarker(i) is `media[i]`);
   * absent or empty: none. Only a chat prompt holds them.
   */
  media?: MediaInput[];
}

/** What the route and serveGeneration know about a request, beside what its body asked. */
export interface RequestTransport {
  /** The id replies and log lines carry. */
  requestId: string;
  /** Fires when the client goes away before the reply is finished. */
  signal: AbortSignal;
  /** The reply goes out as a stream: then tool calls stream as written, unverified. */
  streamed: boolean;
  /** Named sessions (SVC_FORK=1): start from a kept state, keep the end state under a name. */
  session: SessionNames | null;
}

export interface SessionNames {
  keep: string | null;
  from: string | null;
}

/** What became of a request's session headers (X-Svc-From: used | unmatched | unknown). */
export interface SessionOutcome {
  from: "used" | "unmatched" | "unknown" | null;
  /** accepted: the end state will be kept under the name; full: SVC_FORK_HANDLES names live, answered as ordinary. */
  keep: "accepted" | "full" | null;
}

export type FinishReason = "stop" | "length" | "tool_calls";

export interface Timings {
  prompt_n: number;
  prompt_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_second: number;
  cache_n: number;
  draft_n: number;
  draft_n_accepted: number;
  /** Remote engine only: the replica that served the request, the prompt tokens it was expected to hold, and why it was chosen. */
  route?: {replica: string; expected_cached: number; reason: string};
}

export interface UsageCounts {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

export interface PromptProgress {
  total: number;
  cache: number;
  processed: number;
  time_ms: number;
}

export interface TokenAlternative {
  /** The token's text (a partial UTF-8 character shows as U+FFFD; `bytes` is exact). */
  token: string;
  logprob: number;
  bytes: number[];
}

export interface TokenLogprob extends TokenAlternative {
  /** Most likely first. */
  top_logprobs: TokenAlternative[];
}

export type GenerationEvent =
  | {type: "progress"; progress: PromptProgress}
  | {type: "text"; text: string}
  | {type: "reasoning"; text: string}
  /** A tool call opens: its name is known. */
  | {type: "tool_call_start"; index: number; id: string; name: string}
  /** More of a tool call's arguments (JSON text; the pieces of one call concatenate to an object). */
  | {type: "tool_call_args"; index: number; text: string}
  | {
      type: "done";
      finishReason: FinishReason;
      /** The stop string or token that ended the reply, when one did. */
      stoppedBy: string | number | null;
      usage: UsageCounts;
      timings: Timings;
      /** One entry per generated token, when the request asked for logprobs. */
      logprobs: TokenLogprob[] | null;
    };
