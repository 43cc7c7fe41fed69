// Shared types of the reply parsers: what the model's text is split into, and how the parser is set up.

import type {CallSyntax} from "../../core/call-syntax.ts";

export interface ToolSpec {
  name: string;
  /** JSON schema of the arguments (may be undefined) — used to type XML parameter values. */
  parameters?: unknown;
}

export type ReplyPart =
  | {kind: "reasoning"; text: string}
  | {kind: "content"; text: string}
  | {kind: "call_start"; index: number; name: string}
  /** A fragment; the fragments of one call concatenate to its arguments JSON text. */
  | {kind: "call_args"; index: number; text: string}
  | {kind: "call_end"; index: number; complete: boolean}
  /** Calls of one region whose syntax did not close properly, and the region's raw text (opener included): a
   * reply that is not streamed shows that text as content instead of the broken calls. */
  | {kind: "malformed"; indices: number[]; text: string};

export interface ReasoningMarkers {
  open: string;
  close: string;
  /** The prompt already opened the block (the generation prompt ends inside it). */
  startsInside: boolean;
}

export interface ReplyParserOptions {
  /** The family's call syntax (the generic form for templates without one); null: the request has no tools,
   * so call-looking text is plain content. */
  calls: CallSyntax | null;
  tools: ToolSpec[];
  /** null: the reply is not read for a reasoning block. */
  reasoning: ReasoningMarkers | null;
  /** Markers that are layout, dropped from content (Command R7B's response markers). */
  layout?: readonly string[];
  /** The reply is harmony messages (gpt-oss): reasoning, content and calls come in channels. */
  harmony?: boolean;
}

export type ReplyMode = "reasoning" | "content" | "call";
