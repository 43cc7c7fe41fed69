// gpt-oss replies (OpenAI's harmony format): a run of messages, each a header, `<|message|>` and a body.
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>
//   <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
// The first header has no `<|start|>assistant` (the generation prompt wrote it). analysis is reasoning, final
// is content, commentary addressed to=functions.NAME is a call whose body is the arguments (JSON), commentary
// without a recipient is a preamble shown as content. `<|call|>` and `<|return|>` end the generation (they are
// end-of-generation tokens, stripped before the text gets here), so the last message usually has no end marker.
// A reply that does not start with a header is read as plain content (a model that ignored the format).

import {JsonValueStream} from "../reply/json-stream.ts";
import {CallEmitter, PartSink, findMarker, partialMarkerLength} from "../reply/sink.ts";
import type {ReplyMode, ReplyPart, ReplyReader} from "../reply/parts.ts";

const MESSAGE = "<|message|>";
const ENDS = ["<|end|>", "<|call|>", "<|return|>", "<|start|>"];
/** A header longer than this without `<|message|>` is not a header. */
const MAX_HEADER = 512;

type Body =
  | {kind: "reasoning"}
  | {kind: "content"}
  | {kind: "call"; index: number; value: JsonValueStream; raw: string}
  /** A call while the request offers no tools, or a channel nobody reads: syntax, dropped. */
  | {kind: "drop"};

export interface HarmonyOptions {
  /** The request offers tools; without, a call message is dropped. */
  calls: boolean;
}

export class HarmonyParser implements ReplyReader {
  private readonly sink = new PartSink();
  private readonly emitter = new CallEmitter(this.sink);
  private state: "header" | "body" | "plain" = "header";
  private body: Body = {kind: "content"};
  private buf = "";
  private finished = false;
  private first = true;

  constructor(private readonly opts: HarmonyOptions) {}

  get mode(): ReplyMode {
    if (this.state !== "body") return "content";
    return this.body.kind === "reasoning" ? "reasoning" : this.body.kind === "call" ? "call" : "content";
  }

  get callsCompleted(): number {
    return this.emitter.completed;
  }

  push(text: string): ReplyPart[] {
    if (this.finished) return [];
    this.buf += text;
    while (this.step(false));
    return this.sink.take();
  }

  finish(): ReplyPart[] {
    if (this.finished) return [];
    while (this.step(true));
    if (this.state === "body") this.endMessage(true);
    this.finished = true;
    this.buf = "";
    return this.sink.take();
  }

  private step(final: boolean): boolean {
    switch (this.state) {
      case "plain":
        if (this.buf !== "") this.sink.add({kind: "content", text: this.buf});
        this.buf = "";
        return false;
      case "header":
        return this.header(final);
      case "body":
        return this.bodyStep(final);
    }
  }

  private header(final: boolean): boolean {
    const t = this.buf.trimStart();
    if (t === "") return false;
    // Only the first message may start without <|start|> (the generation prompt wrote it): with its channel, or
    // with its recipient (` to=functions.x<|channel|>...`); anything else means the model ignored the format.
    if (this.first && !t.startsWith("<|") && !"<|".startsWith(t) && !t.startsWith("to=") && !"to=".startsWith(t)) {
      this.state = "plain";
      return true;
    }
    const at = this.buf.indexOf(MESSAGE);
    if (at < 0) {
      if (final || this.buf.length > MAX_HEADER) {
        // Never finished a header: it was syntax, not text.
        this.buf = "";
      }
      return false;
    }
    const header = this.buf.slice(0, at);
    this.buf = this.buf.slice(at + MESSAGE.length);
    this.first = false;
    this.state = "body";
    this.body = this.bodyFor(header);
    return true;
  }

  private bodyFor(header: string): Body {
    const channel = /<\|channel\|>\s*([A-Za-z_]+)/.exec(header)?.[1] ?? "final";
    const recipient = /\bto=([^\s<]+)/.exec(header)?.[1] ?? null;
    if (recipient !== null && recipient !== "assistant") {
      if (!this.opts.calls || !recipient.startsWith("functions.")) return {kind: "drop"};
      const index = this.emitter.start(recipient.slice("functions.".length));
      return {kind: "call", index, value: new JsonValueStream(), raw: header + MESSAGE};
    }
    if (channel === "analysis") return {kind: "reasoning"};
    return {kind: "content"};
  }

  private bodyStep(final: boolean): boolean {
    const hit = findMarker(this.buf, ENDS);
    if (hit) {
      this.emit(this.buf.slice(0, hit.at));
      // <|start|> belongs to the next message's header.
      this.buf = this.buf.slice(hit.at + (hit.marker === "<|start|>" ? 0 : hit.marker.length));
      this.endMessage(hit.marker === "<|call|>" || hit.marker === "<|end|>" || hit.marker === "<|return|>" || hit.marker === "<|start|>");
      this.state = "header";
      return true;
    }
    const keep = final ? 0 : partialMarkerLength(this.buf, ENDS);
    const n = this.buf.length - keep;
    if (n <= 0) return false;
    this.emit(this.buf.slice(0, n));
    this.buf = this.buf.slice(n);
    return false;
  }

  private emit(text: string): void {
    if (text === "") return;
    const body = this.body;
    switch (body.kind) {
      case "reasoning":
        this.sink.add({kind: "reasoning", text});
        return;
      case "content":
        this.sink.add({kind: "content", text});
        return;
      case "call": {
        body.raw += text;
        if (body.value.done || body.value.failed) return;
        const r = body.value.push(text);
        if (r.out !== "") this.emitter.args(body.index, r.out);
        return;
      }
      case "drop":
        return;
    }
  }

  /** A message ended (`closed`: by its own marker or the end of generation, as harmony calls end). */
  private endMessage(closed: boolean): void {
    const body = this.body;
    if (body.kind === "call") {
      const complete = closed && body.value.done;
      if (!body.value.done) {
        const rest = body.value.finish();
        this.emitter.args(body.index, rest === "" ? "{}" : rest);
      }
      this.emitter.end(body.index, complete);
      if (!complete) this.sink.add({kind: "malformed", indices: [body.index], text: body.raw});
    }
    this.body = {kind: "content"};
  }
}
