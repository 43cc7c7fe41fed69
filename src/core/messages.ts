// The conversation as the pipeline and the chat template see it: messages with their text already flattened
// by the dialect. It lives in core because the request (core/generation.ts) carries it, and core imports nothing.

export type Role = "system" | "developer" | "user" | "assistant" | "tool";

export interface TemplateToolCall {
  id: string;
  type: "function";
  function: {name: string; arguments: string};
}

export interface TemplateMessage {
  role: Role;
  /** Already flattened text (the dialect joins text parts). */
  content: string;
  name?: string;
  /** Assistant messages. */
  tool_calls?: TemplateToolCall[];
  /** Tool messages. */
  tool_call_id?: string;
  /** Assistant messages: an earlier turn's reasoning. */
  reasoning_content?: string;
  /**
   * Assistant messages: calls the server wrote into the turn itself, after its content (pipeline/past-calls.ts),
   * where the template would not show them. Client pieces are client text; the others are the syntax's special
   * markers, tokenized as template text.
   */
  written_calls?: WrittenPiece[];
}

export interface WrittenPiece {
  text: string;
  client: boolean;
}
