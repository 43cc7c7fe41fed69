// What a model family is to the server: how it is recognised, how it writes reasoning and tool calls, and what
// its chat template needs in its input. One file per family sits next to this one; index.ts lists them most
// specific first. The rest of the code asks the family (reply parsing, strict-tool grammars, template input,
// /health); nothing else switches on syntax names.

import type {CallSyntax, ReasoningSyntax} from "../../core/call-syntax.ts";

/** What detection looks at: the template text and, where the GGUF has them, its metadata. */
export interface TemplateFacts {
  source: string;
  /** general.architecture, e.g. "llama", "qwen3", "gpt-oss"; null when unknown. */
  architecture: string | null;
  /** general.name; null when unknown. */
  modelName: string | null;
  /** How the template renders an assistant turn holding one probe call (svc_probe_fn with one string argument),
   * from the end of the conversation before it; null when it cannot render one. Tells layouts apart that the
   * template text hides in its code (GLM 4.6 vs 4.7). */
  renderedCall: string | null;
}

/** How an earlier turn's reasoning reaches the template. */
export type ReasoningInput =
  /** `message.reasoning_content` (most templates read this). */
  | "reasoning_content"
  /** `message.reasoning` (Solar Open). */
  | "reasoning"
  /** `message.thinking` (gpt-oss). */
  | "thinking"
  /** Content as blocks: `[{type: "thinking", thinking}, {type: "text", text}]` (Mistral reasoning models). */
  | "content-blocks"
  /** Content as `{blocks: [{type: "thoughts", text}, {type: "response", text}]}` (Apertus). */
  | "thought-blocks"
  /** The template cannot show earlier reasoning: it is left out. */
  | "none";

export interface TemplateInputNeeds {
  /** A tool-call id the template accepts (Mistral: exactly 9 alphanumerics), from the client's id. The same
   * mapping is applied to `tool_call_id` of tool results, so the pairs still match. */
  toolCallId?: (id: string) => string;
  reasoning: ReasoningInput;
  /** Tool-call arguments as a parsed object (true) or the client's JSON string (false); absent: found by rendering
   * a probe call both ways (chat-template.ts). */
  argumentsAsObject?: boolean;
  /** The template reads the tools as JSON text from these variables, not from `tools` (FireFunction: `functions`,
   * with today's date in `datetime`): their values, from the tools as the template would get them. */
  toolsText?: (tools: unknown[]) => Record<string, string>;
}

export interface ModelFamily {
  /** Stable id, reported in /health and the log ("qwen3", "llama3", ...). */
  id: string;
  /** Human name for the families table (docs/families.md) and /health. */
  name: string;
  /** Whether the template (and metadata) is this family's. Families are tried most specific first. */
  matches(facts: TemplateFacts): boolean;
  /** The reasoning block, or null when the family has none. */
  reasoning: ReasoningSyntax | null;
  /** How calls are written; null: the generic JSON form, taught in a system message (templates without tools). */
  calls: CallSyntax | null;
  /** Several calls in one reply. */
  parallelCalls: boolean;
  /** Special-token texts the reply parser must see (they are control tokens that a plain detokenization drops). */
  preserved: readonly string[];
  /** Marker texts that are layout, dropped from content wherever they appear (Command R7B's response markers). */
  layout?: readonly string[];
  /** What the format writes before an answer, as a GBNF expression: a JSON schema binds after it (gpt-oss writes
   * its answer in a final message). Absent: the answer's first token is the JSON's. */
  answerLeadIn?: string;
  input: TemplateInputNeeds;
}

/** The markers most families use for reasoning. */
export const THINK: ReasoningSyntax = {open: "<think>", close: "</think>"};

/**
 * Whether the probe call the template rendered matches `pattern`; templates that cannot render a call are judged
 * by their text (`fallback`).
 */
export function writesCall(facts: TemplateFacts, pattern: RegExp, fallback: boolean): boolean {
  return facts.renderedCall !== null ? pattern.test(facts.renderedCall) : fallback;
}

/** True when every needle occurs in the template text. */
export function has(source: string, ...needles: string[]): boolean {
  return needles.every((n) => source.includes(n));
}
