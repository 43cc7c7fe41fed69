// Replies as messages addressed to recipients. Muse Glimmer's ATEM protocol:
//    to=self<|message|>REASONING<|eom|>
//   <|start|>assistant to=get_weather<|message|><atem:function_calls>
//   <atem:invoke name="get_weather">
//   <atem:parameter name="city">Paris</atem:parameter>
//   </atem:invoke>
//   </atem:function_calls><|eom|>
//   <|start|>assistant to=user<|message|>ANSWER<|eot|>
// Functionary v3.2: `all\nTEXT>>>get_weather\n{"city": "Paris"}` (the generation prompt wrote the first `>>>`).
// The first header has no message start (the generation prompt wrote it). The reasoning recipient's body is
// reasoning, the content recipient's is content, any other recipient's is a tool call: in the body's xml syntax, read
// by that shape's region, or its arguments as JSON. A reply that does not start with a header is read as plain content
// (a model that ignored the format). A call message while the request offers no tools is syntax, dropped.

import type {RecipientCallSyntax} from "../../core/call-syntax.ts";
import type {ReplyMode, ReplyPart, ReplyReader, ReplyToolSpec} from "../reply/parts.ts";
import {JsonValueStream} from "../reply/json-stream.ts";
import {CallEmitter, type CallRegion, findMarker, PartSink, partialMarkerLength} from "../reply/sink.ts";
import type {CallParsing} from "../shape.ts";

/** A header longer than this without its end is not a header. */
const MAX_HEADER = 512;

type Body =
  | {kind: "reasoning"}
  | {kind: "content"}
  /** A tool's message in an xml body: its region once the body's opener was read, and the region's raw text. */
  | {kind: "call"; region: CallRegion | null; first: number; raw: string}
  /** A tool's message whose body is its arguments as JSON. */
  | {kind: "json"; index: number; value: JsonValueStream; raw: string}
  | {kind: "drop"};

export class RecipientsReader implements ReplyReader {
  private readonly sink = new PartSink();
  private readonly emitter = new CallEmitter(this.sink);
  /** Whatever ends a message body (the next message's start too). */
  private readonly ends: readonly string[];
  private state: "header" | "body" | "plain" = "header";
  private body: Body = {kind: "content"};
  private buf = "";
  private finished = false;
  private first = true;

  constructor(
    private readonly s: RecipientCallSyntax,
    /** The body syntax's call parsing (its openers and region); null: the body is the arguments as JSON. */
    private readonly parsing: CallParsing | null,
    private readonly opts: {calls: boolean; tools: readonly ReplyToolSpec[]},
  ) {
    this.ends = [...s.ends, s.start];
  }

  get mode(): ReplyMode {
    if (this.state !== "body") return "content";
    return this.body.kind === "reasoning" ? "reasoning" : this.body.kind === "call" || this.body.kind === "json" ? "call" : "content";
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
    if (this.state === "body") this.endMessage();
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
        return this.body.kind === "call" ? this.callStep(this.body, final) : this.textStep(final);
    }
  }

  private header(final: boolean): boolean {
    const t = this.buf.trimStart();
    if (t === "") return false;
    // The first message starts at its recipient (` to=user<|message|>`: the prompt wrote the message start), or with the
    // message start a model may write anyway; a later one with the message start.
    const leads = this.first ? [this.s.to.trimStart(), this.s.start] : [this.s.start];
    if (!leads.some((lead) => t.startsWith(lead) || (lead.startsWith(t) && !final))) {
      if (this.first) {
        this.state = "plain";
        return true;
      }
      // Text between messages that is not a message: shown, up to where a message could start.
      const at = t.indexOf(this.s.start);
      const shown = at < 0 ? t.slice(0, t.length - (final ? 0 : partialMarkerLength(t, [this.s.start]))) : t.slice(0, at);
      if (shown === "") return false;
      this.sink.add({kind: "content", text: shown});
      this.buf = t.slice(shown.length);
      return true;
    }
    const at = this.buf.indexOf(this.s.headerEnd);
    if (at < 0 && !final && this.buf.length <= MAX_HEADER) return false;
    const header = at < 0 ? null : this.buf.slice(0, at);
    const recipient = header === null ? null : this.recipientOf(header);
    if (recipient === null) {
      // Never finished a header, or not one a recipient can be read from: the first message is plain text (a model that
      // ignored the format); a later one was syntax, dropped.
      if (this.first) this.state = "plain";
      else this.buf = "";
      return this.first;
    }
    this.buf = this.buf.slice(at + this.s.headerEnd.length);
    this.first = false;
    this.state = "body";
    this.body = this.bodyFor(recipient, header! + this.s.headerEnd);
    return true;
  }

  /** The recipient a header names (after the message start and `to`), or null when it names none. */
  private recipientOf(header: string): string | null {
    let h = header.trimStart();
    if (h.startsWith(this.s.start)) h = h.slice(this.s.start.length);
    const to = this.s.to.trim();
    if (to !== "") {
      const at = h.indexOf(to);
      if (at < 0) return null;
      h = h.slice(at + to.length);
    }
    const name = h.trim();
    return /^[A-Za-z0-9_.:-]{1,64}$/.test(name) ? name : null;
  }

  private bodyFor(recipient: string, raw: string): Body {
    if (recipient === this.s.reasoning) return {kind: "reasoning"};
    if (recipient === this.s.content) return {kind: "content"};
    if (!this.opts.calls) return {kind: "drop"};
    if (this.parsing === null) return {kind: "json", index: this.emitter.start(recipient), value: new JsonValueStream(), raw};
    return {kind: "call", region: null, first: this.emitter.count, raw};
  }

  /** Reasoning, content, JSON arguments and dropped bodies: text up to the message's end. */
  private textStep(final: boolean): boolean {
    const hit = findMarker(this.buf, this.ends);
    if (hit) {
      this.emit(this.buf.slice(0, hit.at));
      // The message start belongs to the next message's header.
      this.buf = this.buf.slice(hit.at + (hit.marker === this.s.start ? 0 : hit.marker.length));
      this.endMessage();
      return true;
    }
    const keep = final ? 0 : partialMarkerLength(this.buf, this.ends);
    const n = this.buf.length - keep;
    if (n <= 0) return false;
    this.emit(this.buf.slice(0, n));
    this.buf = this.buf.slice(n);
    return false;
  }

  /** A tool's body: the body syntax's opener, its region, then nothing but the message's end. */
  private callStep(body: Extract<Body, {kind: "call"}>, final: boolean): boolean {
    if (body.region === null) {
      const t = this.buf.trimStart();
      const parsing = this.parsing!;
      const opener = parsing.openers.find((o) => t.startsWith(o));
      if (opener === undefined) {
        if (!final && parsing.openers.some((o) => o.startsWith(t))) return false;
        // Not a call in the body's syntax: the message is dropped as syntax.
        this.body = {kind: "drop"};
        return true;
      }
      body.raw += this.buf.slice(0, this.buf.length - t.length + opener.length);
      this.buf = t.slice(opener.length);
      body.region = parsing.region(opener, this.emitter);
      return true;
    }
    const region = body.region;
    if (!region.ended) {
      const n = region.feed(this.buf, final);
      body.raw += this.buf.slice(0, n);
      this.buf = this.buf.slice(n);
      if (!region.ended) {
        if (final) region.finish();
        return n > 0 && !final;
      }
    }
    // After the call: whitespace, then the message's end.
    const t = this.buf.trimStart();
    const hit = findMarker(t, this.ends);
    if (hit !== null && hit.at === 0) {
      this.buf = t.slice(hit.marker === this.s.start ? 0 : hit.marker.length);
      this.endMessage();
      return true;
    }
    if (!final && (t === "" || this.ends.some((e) => e.startsWith(t)))) return false;
    // Something else follows the call in its message: the message ends here, and the rest is read as a header would be.
    this.buf = t;
    this.endMessage();
    return t !== "";
  }

  private emit(text: string): void {
    if (text === "") return;
    const body = this.body;
    if (body.kind === "reasoning") this.sink.add({kind: "reasoning", text});
    else if (body.kind === "content") this.sink.add({kind: "content", text});
    else if (body.kind === "json") {
      body.raw += text;
      if (body.value.done || body.value.failed) return;
      const r = body.value.push(text);
      if (r.out !== "") this.emitter.args(body.index, r.out);
    }
  }

  private endMessage(): void {
    const body = this.body;
    if (body.kind === "json") {
      // Complete when the arguments closed and only layout followed them.
      const complete = body.value.done && !body.value.failed;
      if (!body.value.done) {
        const rest = body.value.finish();
        this.emitter.args(body.index, rest === "" ? "{}" : rest);
      }
      this.emitter.end(body.index, complete);
      if (!complete) this.sink.add({kind: "malformed", indices: [body.index], text: body.raw});
    }
    if (body.kind === "call") {
      if (body.region && !body.region.ended) body.region.finish();
      const broken: number[] = [];
      for (let i = body.first; i < this.emitter.count; i++) if (this.emitter.incomplete.has(i)) broken.push(i);
      if (broken.length > 0) this.sink.add({kind: "malformed", indices: broken, text: body.raw});
    }
    this.body = {kind: "content"};
    this.state = "header";
  }
}
