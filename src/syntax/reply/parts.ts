// What a reply's text is split into as it streams: the parts every shape's parser emits, and the reader the
// pipeline drives (src/pipeline/reply/parser.ts, or a shape's own reader: harmony).

/** A tool as the reply parsers see it. */
export interface ReplyToolSpec {
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

export type ReplyMode = "reasoning" | "content" | "call";

/** What the pipeline drives: push text, finish, and read where the reply is. */
export interface ReplyReader {
  readonly mode: ReplyMode;
  readonly callsCompleted: number;
  push(text: string): ReplyPart[];
  finish(): ReplyPart[];
}
