// Earlier turns' tool calls, written back into the prompt where the chat template would not show them: always in
// the generic form (its template has no call syntax, so a call turn would render as an empty assistant turn and the
// model would never see what it called), and in a family's own syntax when its template drops past calls (Granite
// 3.3). Written as the model writes them, so a follow-up's prompt repeats the reply's tokens and resumes from the
// kept state past the call instead of diverging where the call starts.
//
// Exactness needs the arguments' text as the model wrote it: a chat or Responses client sends back the string the
// server gave it, but Messages clients send `input` as an object, which the dialect can only re-serialize. The
// pipeline therefore remembers the argument text of each call it wrote, by call id, and uses it when the client's
// arguments are the same JSON; and for a reply that was nothing but calls (the generic form's whole reply), the
// reply's own text, whatever layout the model chose for the envelope.

import type {CallSyntax} from "../core/call-syntax.ts";
import type {TemplateMessage, TemplateToolCall, WrittenPiece} from "../core/messages.ts";
import {shapeOf, type Piece, type WrittenCall} from "../syntax/index.ts";

/** Call ids remembered (the oldest are forgotten first): well over the calls of the conversations the regions hold. */
const REMEMBERED = 4096;

export class PastCalls {
  /** Call id -> its arguments as the model wrote them. */
  private readonly written = new Map<string, string>();
  /** The call ids of a reply that was nothing but its calls -> the reply's text (the layout the model chose). */
  private readonly turns = new Map<string, {text: string; calls: {name: string; args: string}[]}>();

  /** `text`: the reply's whole text when it holds no special token (null otherwise). */
  remember(reply: {reasoning: string; content: string; calls: readonly {id: string; name: string; args: string}[]}, text: string | null): void {
    for (const call of reply.calls) {
      if (this.written.size >= REMEMBERED) this.written.delete(this.written.keys().next().value!);
      this.written.set(call.id, call.args);
    }
    if (text !== null && reply.reasoning === "" && reply.content === "" && reply.calls.length > 0) {
      if (this.turns.size >= REMEMBERED) this.turns.delete(this.turns.keys().next().value!);
      this.turns.set(turnKey(reply.calls), {text, calls: reply.calls.map(({name, args}) => ({name, args}))});
    }
  }

  /** The reply's own text for a turn of only calls this server wrote, when the client sent them back unchanged. */
  private asReplied(content: string, calls: readonly TemplateToolCall[]): string | undefined {
    const turn = content === "" ? this.turns.get(turnKey(calls.map((c) => ({id: c.id})))) : undefined;
    if (!turn || turn.calls.length !== calls.length) return undefined;
    const same = calls.every((c, i) => c.function.name === turn.calls[i]!.name && sameJson(c.function.arguments, turn.calls[i]!.args));
    return same ? turn.text : undefined;
  }

  /**
   * The messages with the calls of each assistant turn the template would not show (`hidden`) written into its
   * content in `syntax` (pieces: the syntax's special markers stay template text, names and arguments are client
   * text). `preserved`: the family's special markers; a custom syntax leaves the messages as they are.
   */
  writeInto(messages: readonly TemplateMessage[], syntax: CallSyntax, preserved: readonly string[],
    hidden: (m: TemplateMessage) => boolean): TemplateMessage[] {
    return messages.map((m) => {
      if (m.role !== "assistant" || !m.tool_calls || m.tool_calls.length === 0 || !hidden(m)) return m;
      const replied = this.asReplied(m.content, m.tool_calls);
      const calls = m.tool_calls.map((c) => ({name: c.function.name, args: this.asWritten(c.id, c.function.arguments)}));
      const pieces = replied !== undefined ? [{client: replied}] : writeCalls(syntax, calls);
      if (pieces === null) return m;
      const written = compose(pieces, preserved, m.content);
      const {tool_calls: _dropped, ...rest} = m;
      return {...rest, written_calls: written};
    });
  }

  private asWritten(id: string, args: string): string {
    const kept = this.written.get(id);
    return kept !== undefined && kept !== args && sameJson(kept, args) ? kept : args;
  }
}

/** Syntax pieces that hold a special marker stay template text (tokenized as the special token the model wrote);
 * everything else joins the client text around it, tokenized as one text the way the model's reply was. */
function compose(pieces: Piece[], preserved: readonly string[], content: string): WrittenPiece[] {
  const out: WrittenPiece[] = [];
  const push = (text: string, client: boolean) => {
    const last = out.at(-1);
    if (last && last.client === client) last.text += text;
    else out.push({text, client});
  };
  if (content !== "" && !/\s$/.test(content)) push("\n", true);
  for (const p of pieces) {
    if ("client" in p) push(p.client, true);
    else push(p.syntax, !preserved.some((marker) => p.syntax.includes(marker)));
  }
  return out.filter((p) => p.text !== "");
}

/**
 * Calls as `syntax` writes them (the layout the strict-tool grammar writes: its shape's writeCalls, src/syntax/), or
 * null for the custom syntaxes, whose templates render calls themselves. Arguments that are a JSON object are written
 * as the client's text; anything else (not JSON) as it came.
 */
export function writeCalls(syntax: CallSyntax, calls: readonly WrittenCall[]): Piece[] | null {
  return shapeOf(syntax).writeCalls(syntax, calls);
}

const turnKey = (calls: readonly {id: string}[]) => calls.map((c) => c.id).join("\u0000");

function sameJson(a: string, b: string): boolean {
  try {
    return canonical(JSON.parse(a)) === canonical(JSON.parse(b));
  } catch {
    return false;
  }
}

/** Key order matters to the text but not to the JSON value: a client may send the keys in another order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}
