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
// Calls: with hermes or qwen-xml, a call opens anywhere in content at <tool_call> (qwen-xml also at a
// bare <function=…>); what follows the tag decides whether it is read as JSON or XML. The generic form
// is recognised only where content starts. Reasoning is never scanned for calls: a call written
// inside an unclosed thinking block stays reasoning text.

import {GenericRegion, HermesRegion, TaggedCallRegion} from "./json-call.ts";
import {XML_FUNCTION_OPEN, XmlCallRegion} from "./qwen-xml.ts";
import {CallEmitter, type CallRegion, PartSink, findMarker, isJsonWs, partialMarkerLength} from "./sink.ts";
import type {ReasoningMarkers, ReplyMode, ReplyParserOptions, ReplyPart, ToolSpec, ToolSyntax} from "./types.ts";

type State = "start" | "reasoning" | "contentStart" | "content" | "region";

const CALL_OPEN = "<tool_call>";
/**
 * A close tag outside any call is still call syntax: it is dropped, not shown. (The text around it is
 * not re-joined, so a contrived "<tool</tool_call>_call>" shows as "<tool" + "_call>" — re-scanning
 * the join would make the result depend on how the text was chunked.)
 */
const STRAY_CLOSE = "</tool_call>";

export class ReplyParser {
  private readonly syntax: ToolSyntax | null;
  private readonly tools: readonly ToolSpec[];
  private readonly think: ReasoningMarkers | null;
  /** Markers content is scanned for (none without tools, and none for generic: it only opens the reply). */
  private readonly contentMarkers: readonly string[];
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

  constructor(opts: ReplyParserOptions) {
    this.syntax = opts.syntax;
    this.tools = opts.tools;
    this.think = opts.reasoning;
    const openers =
      opts.syntax === "qwen-xml" ? [CALL_OPEN, XML_FUNCTION_OPEN] : opts.syntax === "hermes" ? [CALL_OPEN] : [];
    this.contentMarkers = openers.length > 0 ? [...openers, STRAY_CLOSE] : [];
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
    if (this.syntax === "generic") {
      const m = matchGenericOpener(this.buf);
      if (m === "partial" && !this.final) return false;
      if (typeof m === "number") {
        this.buf = this.buf.slice(m);
        this.enterRegion(new GenericRegion(this.calls));
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
    if (m) {
      const before = this.buf.slice(0, m.at);
      this.buf = this.buf.slice(m.at + m.marker.length);
      if (m.marker === STRAY_CLOSE) {
        this.content(before);
        return true;
      }
      this.content(before.trimEnd());
      this.enterRegion(this.callRegion(m.marker));
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
    this.buf = this.buf.slice(n);
    if (region.ended) {
      this.region = null;
      this.state = "content";
      this.afterCall = true;
      return true;
    }
    if (this.final) {
      region.finish();
      this.region = null;
      this.state = "content";
      this.buf = "";
      return false;
    }
    return n > 0;
  }

  private callRegion(opener: string): CallRegion {
    const xml = () => new XmlCallRegion(this.calls, this.tools, opener);
    if (opener === XML_FUNCTION_OPEN) return xml();
    return new TaggedCallRegion(() => new HermesRegion(this.calls), xml);
  }

  private enterRegion(region: CallRegion): void {
    this.region = region;
    this.state = "region";
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

const GENERIC_OPENER = ["{", '"tool_calls"', ":", "["];

/**
 * Matches /^\s*\{\s*"tool_calls"\s*:\s*\[/ incrementally: the opener's length, "partial" while the
 * text could still become it, "no" once it cannot.
 */
export function matchGenericOpener(s: string): number | "partial" | "no" {
  let i = 0;
  for (const piece of GENERIC_OPENER) {
    while (i < s.length && isJsonWs(s[i]!)) i++;
    for (const ch of piece) {
      if (i >= s.length) return "partial";
      if (s[i++] !== ch) return "no";
    }
  }
  return i;
}
