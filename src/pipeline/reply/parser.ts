// Splits the model's generated text, arriving in arbitrary chunks, into reasoning, content and tool
// calls. Hard rule: no call syntax and no reasoning marker ever reaches content, so text that could be
// the start of a marker is held back until it is decided (released as text, or consumed as syntax).
//
// Layout, following what Qwen's own templates do with a reply (lstrip/rstrip of "\n"):
//   [ws] <think> \n* REASONING \n* </think> \n* CONTENT [calls…]
// The thinking block counts only at the very start of the reply (after optional whitespace), unless
// the prompt already opened it. Trailing newlines of reasoning are held until it is known whether
// </think> follows. With a call syntax, trailing whitespace of content is held too, so content that
// precedes a call, and whitespace between calls or after the last one, does not show as blank lines.
//
// Calls: the family's call shape (src/syntax/<shape>/, its `parsing`) says which markers open a call anywhere in content (Qwen XML:
// <tool_call>, also a bare <function=…>; Mistral: [TOOL_CALLS]; ...) and which forms can only start the
// content (the generic form, Llama 3). Reasoning is never scanned for calls: a call written inside an
// unclosed thinking block stays reasoning text. A close marker outside any call is still call syntax: it is
// dropped, not shown, as are the family's layout markers. (The text around a dropped marker is not re-joined,
// so a contrived "<tool</tool_call>_call>" shows as "<tool" + "_call>": re-scanning the join would make the
// result depend on how the text was chunked.)

import {CallEmitter, type CallParsing, type CallRegion, findMarker, isJsonWs, PartSink, partialMarkerLength, shapeOf} from "../../syntax/index.ts";
import type {ReasoningMarkers, ReplyMode, ReplyParserOptions, ReplyPart, ReplyReader} from "./types.ts";

type State = "start" | "reasoning" | "contentStart" | "content" | "region";

/** The parser a family's replies need: its shape's own reader (harmony's messages in channels), or text with markers. */
export function createReplyParser(opts: ReplyParserOptions): ReplyReader {
  const own = opts.familyCalls;
  const reader = own ? shapeOf(own).reader : undefined;
  return reader ? reader(own!, {calls: opts.calls !== null, tools: opts.tools}) : new ReplyParser(opts);
}

export class ReplyParser implements ReplyReader {
  private readonly parsing: CallParsing | null;
  private readonly think: ReasoningMarkers | null;
  /** Markers content is scanned for: call openers, stray closes and layout (none without tools or layout). */
  private readonly contentMarkers: readonly string[];
  /** Markers dropped from content. */
  private readonly dropped: ReadonlySet<string>;
  private readonly sink = new PartSink();
  private readonly calls = new CallEmitter(this.sink);
  private state: State;
  private buf = "";
  private final = false;
  private finished = false;
  /** Reasoning has not shown a non-newline char yet (leading newlines are layout). */
  private reasoningFresh = true;
  /** Content right after </think>: its leading newlines are layout. */
  private trimNewlines = false;
  /**
   * Right after a call. Whitespace there is layout when nothing (or only another call) was shown
   * before, or when the reply ends; between content and more content it stays as the separator.
   */
  private afterCall = false;
  private contentShown = false;
  private region: CallRegion | null = null;
  /** The current region's raw text (its opener and what it consumed), and the first call index it can hold. */
  private regionRaw = "";
  private regionFirstCall = 0;

  constructor(opts: ReplyParserOptions) {
    const syntax = opts.calls;
    const parsing = syntax ? shapeOf(syntax).parsing(syntax, opts.tools) : null;
    if (syntax && parsing === null) throw new Error(`${JSON.stringify(syntax)}: replies in this syntax are read by its shape's own reader (createReplyParser)`);
    this.parsing = parsing;
    this.think = opts.reasoning;
    const layout = opts.layout ?? [];
    this.dropped = new Set([...(this.parsing?.strays ?? []), ...layout]);
    this.contentMarkers = [...(this.parsing?.openers ?? []), ...this.dropped];
    this.state = this.think === null ? "contentStart" : this.think.startsInside ? "reasoning" : "start";
  }

  get mode(): ReplyMode {
    if (this.state === "reasoning") return "reasoning";
    return this.state === "region" ? "call" : "content";
  }

  /** Calls whose syntax closed properly (call_end with complete=true). */
  get callsCompleted(): number {
    return this.calls.completed;
  }

  push(text: string): ReplyPart[] {
    if (this.finished) return [];
    this.buf += text;
    while (this.step());
    return this.sink.take();
  }

  /** End of generation: releases held text and closes an unterminated call best-effort. */
  finish(): ReplyPart[] {
    if (this.finished) return [];
    this.final = true;
    while (this.step());
    this.finished = true;
    this.buf = "";
    return this.sink.take();
  }

  /** Advances the state machine; false when it needs more text (or, when final, has nothing left). */
  private step(): boolean {
    switch (this.state) {
      case "start":
        return this.atStart();
      case "reasoning":
        return this.inReasoning();
      case "contentStart":
        return this.atContentStart();
      case "content":
        return this.inContent();
      case "region":
        return this.inRegion();
    }
  }

  private atStart(): boolean {
    const open = this.think!.open;
    const t = this.buf.trimStart();
    if (t.startsWith(open)) {
      this.buf = t.slice(open.length);
      this.state = "reasoning";
      return true;
    }
    if (!this.final && open.startsWith(t)) return false;
    this.state = "contentStart"; // not a thinking block: the held whitespace is content
    return true;
  }

  private inReasoning(): boolean {
    if (this.reasoningFresh) {
      const n = leadingNewlines(this.buf);
      this.buf = this.buf.slice(n);
      if (this.buf === "" && !this.final) return false;
      this.reasoningFresh = false;
    }
    const close = this.think!.close;
    const at = this.buf.indexOf(close);
    if (at >= 0) {
      this.reasoning(this.buf.slice(0, at).replace(/\n+$/, ""));
      this.buf = this.buf.slice(at + close.length);
      this.state = "contentStart";
      this.trimNewlines = true;
      return true;
    }
    if (this.final) {
      // Never closed: all of it is reasoning.
      this.reasoning(this.buf.replace(/\n+$/, ""));
      this.buf = "";
      return false;
    }
    let keep = partialMarkerLength(this.buf, [close]);
    keep += trailingRun(this.buf, this.buf.length - keep, (c) => c === "\n");
    return this.release(keep, (t) => this.reasoning(t));
  }

  private atContentStart(): boolean {
    if (this.trimNewlines) {
      const n = leadingNewlines(this.buf);
      this.buf = this.buf.slice(n);
      if (this.buf === "" && !this.final) return false;
      this.trimNewlines = false;
    }
    const start = this.parsing?.start;
    if (start) {
      const m = matchStart(this.buf, start.pieces);
      if (m === "partial" && !this.final) return false;
      if (typeof m === "number") {
        // An envelope is consumed; the start of a call object is left for the region to read.
        const opener = start.consumed ? this.buf.slice(0, m) : "";
        this.buf = start.consumed ? this.buf.slice(m) : this.buf.trimStart();
        this.enterRegion(this.parsing!.region(null, this.calls), opener);
        return true;
      }
    }
    this.state = "content";
    return true;
  }

  private inContent(): boolean {
    if (this.afterCall) {
      const ws = this.buf.length - this.buf.trimStart().length;
      if (ws === this.buf.length) {
        if (this.final) this.buf = "";
        return false;
      }
      if (!this.contentShown) this.buf = this.buf.slice(ws);
      this.afterCall = false;
    }
    if (this.buf === "") return false;
    if (this.contentMarkers.length === 0) {
      this.content(this.buf);
      this.buf = "";
      return false;
    }
    const m = findMarker(this.buf, this.contentMarkers);
    if (m && this.dropped.has(m.marker) && !this.final) {
      // A dropped marker inside a longer marker still arriving (Command R+'s close ``` in its opener "Action:\n```json",
      // Solar Open's layout <|begin|>assistant in <|begin|>assistant<|content|>) waits until that one is decided.
      const pending = partialMarkerLength(this.buf, this.contentMarkers);
      if (pending > 0 && this.buf.length - pending <= m.at) {
        const keep = pending + trailingRun(this.buf, this.buf.length - pending, (c) => /\s/.test(c));
        return this.release(keep, (t) => this.content(t));
      }
    }
    if (m) {
      const before = this.buf.slice(0, m.at);
      this.buf = this.buf.slice(m.at + m.marker.length);
      if (this.dropped.has(m.marker)) {
        this.content(before);
        return true;
      }
      const shown = before.trimEnd();
      this.content(shown);
      // The layout whitespace before a call belongs to its raw text (shown if the call turns out malformed).
      this.enterRegion(this.parsing!.region(m.marker, this.calls), before.slice(shown.length) + m.marker);
      return true;
    }
    if (this.final) {
      this.content(this.buf);
      this.buf = "";
      return false;
    }
    let keep = partialMarkerLength(this.buf, this.contentMarkers);
    keep += trailingRun(this.buf, this.buf.length - keep, (c) => /\s/.test(c));
    return this.release(keep, (t) => this.content(t));
  }

  private inRegion(): boolean {
    const region = this.region!;
    const n = region.feed(this.buf, this.final);
    this.regionRaw += this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    if (region.ended) {
      this.leaveRegion();
      this.afterCall = true;
      return true;
    }
    if (this.final) {
      this.regionRaw += this.buf;
      region.finish();
      this.leaveRegion();
      this.buf = "";
      return false;
    }
    return n > 0;
  }

  private leaveRegion(): void {
    this.region = null;
    this.state = "content";
    const broken = [];
    for (let i = this.regionFirstCall; i < this.calls.count; i++) if (this.calls.incomplete.has(i)) broken.push(i);
    if (broken.length > 0) this.sink.add({kind: "malformed", indices: broken, text: this.regionRaw});
  }

  private enterRegion(region: CallRegion, opener: string): void {
    this.region = region;
    this.state = "region";
    this.regionRaw = opener;
    this.regionFirstCall = this.calls.count;
  }

  /** Releases all of buf but its last `keep` chars. */
  private release(keep: number, emit: (text: string) => void): boolean {
    const n = this.buf.length - keep;
    if (n <= 0) return false;
    emit(this.buf.slice(0, n));
    this.buf = this.buf.slice(n);
    return true;
  }

  private reasoning(text: string): void {
    this.sink.add({kind: "reasoning", text});
  }

  private content(text: string): void {
    if (text !== "") this.contentShown = true;
    this.sink.add({kind: "content", text});
  }
}

function leadingNewlines(s: string): number {
  let n = 0;
  while (n < s.length && s[n] === "\n") n++;
  return n;
}

/** Length of the run of chars matching `test` that ends at `end`. */
function trailingRun(s: string, end: number, test: (c: string) => boolean): number {
  let i = end;
  while (i > 0 && test(s[i - 1]!)) i--;
  return end - i;
}

/**
 * Matches the start pieces incrementally, JSON whitespace allowed before each: the matched length, "partial"
 * while the text could still become it, "no" once it cannot.
 */
export function matchStart(s: string, pieces: readonly string[]): number | "partial" | "no" {
  let i = 0;
  for (const piece of pieces) {
    while (i < s.length && isJsonWs(s[i]!)) i++;
    for (const ch of piece) {
      if (i >= s.length) return "partial";
      if (s[i++] !== ch) return "no";
    }
  }
  return i;
}
