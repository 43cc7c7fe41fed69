// Parsed reply parts → GenerationEvents (see ReplyShaper), and the reply as a client sends it back.

import {randomBytes} from "node:crypto";
import type {GenerationEvent} from "../core/generation.ts";
import {createReplyParser, type ReplyPart, type ReplyReader} from "./reply/index.ts";
import type {ReplyPlan} from "./reply-plan.ts";
import type {ReplySteering} from "./steering.ts";

export interface ReplyRecord {
  reasoning: string;
  content: string;
  calls: {id: string; name: string; args: string}[];
}

/**
 * Parsed reply parts → GenerationEvents: reasoning, content, tool calls; counts and the stop at the call limit. A reply
 * that is not streamed holds each call until its syntax closes: a call the model broke (unclosed, arguments that
 * are not JSON) comes back as the text it wrote, in the content. A streamed call went out as it was written and
 * stays; either way the request's log line counts it as malformed.
 */
export class ReplyShaper {
  private readonly parser: ReplyReader;
  /** The parser's call index -> the index the call went out with. */
  private readonly outIndex = new Map<number, number>();
  reasoningTokens = 0;
  calls = 0;
  callsComplete = true;
  /** Calls whose syntax did not close properly. */
  malformed = 0;
  /** Calls closed so far, as the call limit counts them. */
  private closedCalls = 0;
  /** The reply is over before its end-of-turn: its last allowed call closed (plan.callLimit). */
  finished = false;
  /** Content is dropped until the JSON answer starts (a preamble may come first). */
  private awaitingJson: boolean;
  /** The reply as its events give it, i.e. as a client sends it back. */
  readonly record: ReplyRecord = {reasoning: "", content: "", calls: []};
  /** Held calls (not streamed): the parser's index -> the call's events so far. */
  private readonly held = new Map<number, {name: string; args: string; ended: boolean}>();

  constructor(private readonly plan: ReplyPlan, private readonly steering: ReplySteering | null, private readonly hold: boolean) {
    this.parser = createReplyParser(plan.parser);
    this.awaitingJson = steering !== null && plan.steering?.answer.kind === "schema";
  }

  *push(text: string): Generator<GenerationEvent> {
    if (text) yield* this.events(this.parser.push(text));
  }

  countToken(): void {
    if (this.parser.mode === "reasoning") this.reasoningTokens++;
  }

  *finish(): Generator<GenerationEvent> {
    yield* this.events(this.parser.finish());
    // A call held without a verdict (none is expected) goes out as it is.
    for (const [index, call] of this.held) yield* this.emitCall(index, call, call.ended);
    this.held.clear();
  }

  private *events(parts: ReplyPart[]): Generator<GenerationEvent> {
    for (const part of parts) {
      // The reply ended with its last allowed call: what the parser still holds (the call's trailing syntax, the
      // start of another call) is not part of it. A streamed call that went out broken is still counted.
      if (this.finished) {
        if (part.kind === "malformed" && !this.hold) this.malformed += part.indices.length;
        continue;
      }
      switch (part.kind) {
        case "reasoning":
          this.record.reasoning += part.text;
          yield {type: "reasoning", text: part.text};
          break;
        case "content":
          yield* this.text(part.text);
          break;
        case "call_start":
          if (this.plan.dropCalls) break;
          if (this.hold) this.held.set(part.index, {name: part.name, args: "", ended: false});
          else yield* this.emitCall(part.index, {name: part.name, args: ""}, false);
          break;
        case "call_args":
          if (this.plan.dropCalls) break;
          if (this.hold) this.held.get(part.index)!.args += part.text;
          else {
            const index = this.outIndex.get(part.index)!;
            this.record.calls[index]!.args += part.text;
            yield {type: "tool_call_args", index, text: part.text};
          }
          break;
        case "call_end": {
          if (!part.complete && !this.hold) this.callsComplete = false;
          const held = this.held.get(part.index);
          if (held) {
            held.ended = true;
            // A broken call waits for the parser's verdict (the "malformed" part that follows).
            if (part.complete) {
              this.held.delete(part.index);
              yield* this.emitCall(part.index, held, true);
            }
          }
          // A held call counts once it is whole (a broken one becomes text); a streamed one has gone out either way.
          // (No limit under tool_choice "none": its dropped calls end nothing.)
          const limit = this.plan.callLimit;
          if (limit && (part.complete || !this.hold) && ++this.closedCalls >= limit.max) this.finished = true;
          break;
        }
        case "malformed":
          this.malformed += part.indices.length;
          if (!this.hold || this.plan.dropCalls) break;
          for (const index of part.indices) this.held.delete(index);
          yield* this.text(part.text);
          break;
      }
    }
  }

  private *text(raw: string): Generator<GenerationEvent> {
    // With a JSON answer after a free preamble, the preamble is dropped (the spec's rule): everything
    // before the JSON's `{`, including preamble text the parser held back until the JSON came.
    let text = raw;
    if (this.awaitingJson) {
      if (!this.steering!.jsonStarted) return;
      const brace = text.indexOf("{");
      if (brace < 0) return;
      text = text.slice(brace);
      this.awaitingJson = false;
    }
    if (text === "") return;
    this.record.content += text;
    yield {type: "text", text};
  }

  /** A call's start (and, for a held one, all its arguments): numbered in the order calls go out. */
  private *emitCall(parserIndex: number, call: {name: string; args: string}, withArgs: boolean): Generator<GenerationEvent> {
    const index = this.calls++;
    const id = `call_${randomBytes(12).toString("hex")}`;
    this.outIndex.set(parserIndex, index);
    this.record.calls.push({id, name: call.name, args: withArgs ? call.args : ""});
    yield {type: "tool_call_start", index, id, name: call.name};
    if (withArgs && call.args !== "") yield {type: "tool_call_args", index, text: call.args};
  }
}

