// Shared types of the reply parsers: what the model's text is split into, and how the parser is set up.

export type ToolSyntax = "qwen-xml" | "hermes" | "generic";

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
  | {kind: "call_end"; index: number; complete: boolean};

export interface ReasoningMarkers {
  open: string;
  close: string;
  /** The prompt already opened the block (the generation prompt ends inside it). */
  startsInside: boolean;
}

export interface ReplyParserOptions {
  /** null: the request has no tools — call-looking text is plain content. */
  syntax: ToolSyntax | null;
  tools: ToolSpec[];
  /** null: the template has no thinking. */
  reasoning: ReasoningMarkers | null;
}

export type ReplyMode = "reasoning" | "content" | "call";
