// The internal vocabulary between dialects and the pipeline. A dialect decodes its body into a
// GenerationRequest and encodes GenerationEvents back into its wire format; nothing below the
// dialects knows about HTTP bodies, and nothing above the pipeline knows about tokens.

import type {TemplateMessage} from "../templates/chat-template.ts";

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
      templateKwargs?: Record<string, unknown>;
      tools?: unknown[];
    }
  /** Raw text, seen by the model exactly as sent: special markers are parsed as special tokens. */
  | {kind: "text"; text: string}
  | {kind: "tokens"; tokens: number[]};

export interface GenerationRequest {
  requestId: string;
  prompt: PromptSpec;
  /** null: until the region is full (or SVC_MAX_TOKENS_DEFAULT when set). */
  maxTokens: number | null;
  sampling: SamplingParams;
  stop: string[];
  stopTokenIds: number[];
  /** Send prompt progress events before the first token. */
  wantProgress: boolean;
  /** Log probability of each generated token under the model's own distribution, with `top` alternatives. */
  logprobs: {top: number} | null;
  /** A compiled JSON schema (GBNF) every token must follow; null = free text. */
  grammar: {gbnf: string; key: string} | null;
  signal: AbortSignal;
}

export type FinishReason = "stop" | "length";

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
