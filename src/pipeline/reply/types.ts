// Shared types of the reply parsers: what the model's text is split into, and how the parser is set up.

import type {CallSyntax} from "../../core/call-syntax.ts";
import type {ReplyToolSpec} from "../../syntax/reply/parts.ts";

export type {ReplyMode, ReplyPart, ReplyReader, ReplyToolSpec as ToolSpec} from "../../syntax/reply/parts.ts";

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
  tools: ReplyToolSpec[];
  /** null: the reply is not read for a reasoning block. */
  reasoning: ReasoningMarkers | null;
  /** Markers that are layout, dropped from content (Command R7B's response markers). */
  layout?: readonly string[];
  /** The family's own call syntax, whether or not the request has tools: a shape that reads whole replies (harmony's
   * channels) reads this family's replies even without tools. */
  familyCalls?: CallSyntax | null;
}
