// Calls whose parameters come one by one in markup (the `xml` CallSyntax): Qwen3-Coder / Qwen3.5, Seed-OSS,
// GLM 4.x, MiniMax M2, DeepSeek V3.2 DSML, MiniCPM 5, Hunyuan 3. For Qwen3-Coder:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// The arguments JSON is built as parameters arrive. String-typed values stream (escaped per chunk, so an escape
// is never split); other values are buffered to their end tag and typed then. Where the syntax's canonical
// layout puts a newline right after the key's end and right before the value's end tag, exactly one such
// newline belongs to the layout, not to the value.
//
// Markers are the syntax's literal pieces split at newlines (the layout); whitespace around them is skipped.
// Tolerated: missing layout newlines; a bare call opener without its wrapper (`<function=` without
// `<tool_call>`); a missing inner close tag when the outer one closes the call. A value ends only at its end
// tag (a value may contain `</function>` when the model writes code), so a missing end tag runs to the end.
// Malformed syntax is dropped, never shown: junk between tags is skipped; a call whose name is malformed drops
// everything up to the call's last close tag (nothing was announced yet), or, for a bare opener, just that tag.

import {CALL_INDEX, type XmlCallSyntax} from "../../core/call-syntax.ts";
import {type CallEmitter, type CallRegion, findMarker, partialMarkerLength, runSteps, STUCK} from "../reply/sink.ts";
import type {ReplyToolSpec as ToolSpec} from "../reply/parts.ts";
import {typedValue, valueKind, type ValueKind} from "./values.ts";

/** A literal piece's markers without their layout: split at line breaks and between adjacent tags ("><"), so
 * whitespace a model puts between two tags is tolerated. */
export function tags(piece: string): string[] {
  return piece.split(/\n|(?<=>)(?=<)/).filter((t) => t !== "");
}

/** What an XmlCallsRegion looks for, derived once per syntax. */
export interface XmlMarkers {
  /** Tags before the name (for Qwen: `<tool_call>`, `<function=`). */
  open: string[];
  /** Ends the name; "" when a line break (or the first key, or the close) ends it (GLM). */
  nameEnd: string;
  keyOpen: string;
  /** Ends the key; the rest of the key's end (GLM's `<arg_value>`, DSML's attributes up to `>`) follows. */
  keyEnd: string;
  /** Tags after keyEnd before the value (GLM: `<arg_value>`). */
  valueOpen: string[];
  /** DSML: the key's end carries attributes up to a `>`, one of which says whether the value is a string. */
  keyAttributes: boolean;
  valueEnd: string;
  /** One leading / trailing newline of a value is layout. */
  valueLead: boolean;
  valueTrail: boolean;
  /** The call's close tags, in order (Qwen: `</function>`, `</tool_call>`). */
  close: string[];
  section: {open: string; close: string} | null;
}

export function xmlMarkers(s: XmlCallSyntax): XmlMarkers {
  const keyEnd = typeof s.keyEnd === "string" ? s.keyEnd : s.keyEnd.string;
  const attributes = typeof s.keyEnd !== "string";
  const keyEndTags = tags(keyEnd);
  return {
    open: tags(s.open),
    // Up to a call index (Kimi K3): the index and what follows it are skipped before the first key.
    nameEnd: tags(s.nameEnd.split(CALL_INDEX)[0]!)[0] ?? "",
    keyOpen: tags(s.keyOpen)[0]!,
    keyEnd: attributes ? keyEnd[0]! : keyEndTags[0]!,
    valueOpen: attributes ? [] : keyEndTags.slice(1),
    keyAttributes: attributes,
    valueEnd: tags(s.valueEnd)[0]!,
    valueLead: keyEnd.endsWith("\n"),
    valueTrail: s.valueEnd.startsWith("\n"),
    close: tags(s.close),
    section: s.section ? {open: tags(s.section.open)[0]!, close: tags(s.section.close)[0]!} : null,
  };
}

type State = "expectCall" | "name" | "body" | "key" | "keyRest" | "value" | "afterCall" | "junk";


export class XmlCallsRegion implements CallRegion {
  ended = false;
  private state: State;
  private index: number | null = null;
  private tool: ToolSpec | undefined;
  private params = 0;
  private kind: ValueKind = "auto";
  private paramName = "";
  private leadDone = false;
  private valueText = "";
  /** Close tags of the current call still to come after the first one seen. */
  private closeLeft: string[] = [];
  /** Open tags still expected before the name (after the tag that opened the region). */
  private openLeft: string[];
  private readonly bare: boolean;

  /**
   * `opener`: the marker that opened the region in the content: the section's open tag, the first open tag, or
   * (bare) the last open tag without the ones before it.
   */
  constructor(
    private readonly calls: CallEmitter,
    private readonly tools: readonly ToolSpec[],
    private readonly m: XmlMarkers,
    opener: string,
  ) {
    const inSection = m.section !== null && opener === m.section.open;
    this.bare = !inSection && m.open.length > 1 && opener === m.open[m.open.length - 1];
    this.openLeft = inSection ? [...m.open] : m.open.slice(m.open.indexOf(opener) + 1);
    this.state = inSection || this.openLeft.length > 0 ? "expectCall" : "name";
  }

  feed(text: string, final: boolean): number {
    return runSteps(text, () => this.ended, (s) => this.step(s, final));
  }

  finish(): void {
    this.closeCall(false);
    this.ended = true;
  }

  /** Returns chars consumed (0 only with a state change) or STUCK. */
  private step(s: string, final: boolean): number {
    switch (this.state) {
      case "expectCall":
        return this.expectCall(s, final);
      case "junk": {
        // A malformed call: skip to its last close tag (or the section's close).
        const markers = [this.m.close[this.m.close.length - 1]!, ...(this.m.section ? [this.m.section.close] : [])];
        const hit = findMarker(s, markers);
        if (hit) {
          this.ended = this.m.section === null || hit.marker === this.m.section.close;
          if (!this.ended) this.restartSection();
          return hit.at + hit.marker.length;
        }
        return dropAllBut(s, final ? 0 : partialMarkerLength(s, markers));
      }
      case "name":
        return this.nameStep(s, final);
      case "body": {
        const markers = [this.m.keyOpen, ...this.m.close, ...(this.m.section ? [this.m.section.close] : [])];
        const hit = findMarker(s, markers);
        if (!hit) return dropAllBut(s, final ? 0 : partialMarkerLength(s, markers));
        if (hit.marker === this.m.keyOpen) this.state = "key";
        else this.closeAt(hit.marker);
        return hit.at + hit.marker.length;
      }
      case "key":
        return this.keyStep(s, final);
      case "keyRest":
        return this.keyRestStep(s, final);
      case "value":
        return this.valueStep(s, final);
      case "afterCall":
        return this.afterCallStep(s, final);
    }
  }

  private expectCall(s: string, final: boolean): number {
    // Skips whitespace (and junk) to the next open tag; the call's (or section's) close ends the region.
    const closer = this.m.section ? this.m.section.close : this.m.close[this.m.close.length - 1]!;
    const markers = [this.openLeft[0]!, closer];
    const hit = findMarker(s, markers);
    if (hit) {
      if (hit.marker === closer) this.ended = true;
      else {
        this.openLeft.shift();
        if (this.openLeft.length === 0) this.state = "name";
      }
      return hit.at + hit.marker.length;
    }
    return dropAllBut(s, final ? 0 : partialMarkerLength(s, markers));
  }

  private nameStep(s: string, final: boolean): number {
    const ends = this.m.nameEnd !== "" ? [this.m.nameEnd] : ["\n", this.m.keyOpen, ...this.m.close];
    const hit = findMarker(s, ends);
    const newline = s.indexOf("\n");
    if (!hit || (this.m.nameEnd !== "" && newline >= 0 && newline < hit.at)) {
      if (!hit && newline < 0 && !final) return STUCK;
      return this.malformedName(s, newline >= 0 ? newline : s.length);
    }
    const name = s.slice(0, hit.at).trim();
    if (name === "" || /[<>"]/.test(name)) return this.malformedName(s, hit.at);
    this.index = this.calls.start(name);
    this.tool = this.tools.find((t) => t.name === name);
    this.calls.args(this.index, "{");
    this.params = 0;
    // A name ended by the first key or the close leaves that marker for the body to read.
    const consumed = this.m.nameEnd !== "" || hit.marker === "\n" ? hit.at + hit.marker.length : hit.at;
    return this.to("body", consumed);
  }

  private malformedName(s: string, at: number): number {
    // Not a call after all. Without a wrapper there is no close tag to skip to: the text after the bare
    // opener is content again (the opener itself stays dropped).
    if (this.bare) {
      this.ended = true;
      return 0;
    }
    return this.to("junk", Math.min(at, s.length));
  }

  private keyStep(s: string, final: boolean): number {
    const at = s.indexOf(this.m.keyEnd);
    const newline = s.indexOf("\n");
    if (at < 0 || (newline >= 0 && newline < at)) {
      if (at < 0 && newline < 0 && !final) return STUCK;
      return this.to("body", newline >= 0 ? newline : s.length); // malformed parameter: skipped
    }
    const name = s.slice(0, at).trim();
    if (name === "") return this.to("body", at + this.m.keyEnd.length);
    this.paramName = name;
    this.attributeKind = null;
    return this.to("keyRest", at + this.m.keyEnd.length);
  }

  /** DSML: string="true|false" said in the key's attributes, when the schema does not decide. */
  private attributeKind: ValueKind | null = null;

  private keyRestStep(s: string, final: boolean): number {
    if (this.m.keyAttributes) {
      const gt = s.indexOf(">");
      if (gt < 0) return final ? this.to("body", s.length) : STUCK;
      const attrs = s.slice(0, gt);
      // DSML: string="true|false"; Kimi K3: the value's JSON type.
      if (/string\s*=\s*"true"|type\s*=\s*"string"/.test(attrs)) this.attributeKind = "string";
      else if (/string\s*=\s*"false"|type\s*=\s*"(number|boolean|object|array|null)"/.test(attrs)) this.attributeKind = "json";
      this.beginValue();
      return this.to("value", gt + 1);
    }
    let i = 0;
    for (const tag of this.m.valueOpen) {
      const rest = s.slice(i);
      const t = rest.trimStart();
      if (t.startsWith(tag)) i += rest.length - t.length + tag.length;
      else if (!final && tag.startsWith(t)) return STUCK;
      // A missing tag is tolerated: the value starts here.
    }
    this.beginValue();
    return this.to("value", i);
  }

  private valueStep(s: string, final: boolean): number {
    if (!this.leadDone) {
      if (s === "" && !final) return STUCK;
      this.leadDone = true;
      return this.m.valueLead && s.startsWith("\n") ? 1 : 0;
    }
    const end = this.m.valueEnd;
    const trail = (at: number) => (this.m.valueTrail && at > 0 && s[at - 1] === "\n" ? 1 : 0);
    const at = s.indexOf(end);
    if (at >= 0) {
      this.valueChunk(s.slice(0, at - trail(at)));
      this.endValue();
      return this.to("body", at + end.length);
    }
    // Held: a possible start of the end tag, and the newline before it (it may be the layout newline).
    let keep = partialMarkerLength(s, [end]);
    keep += trail(s.length - keep);
    if (final) {
      // Cut inside the value: the partial end tag and the layout newline are dropped; finish() closes it.
      if (s === "") return STUCK;
      this.valueChunk(s.slice(0, s.length - keep));
      return s.length;
    }
    // Half of a surrogate pair waits for its other half, so the pair is not escaped as two \u escapes.
    if (isHighSurrogate(s.charCodeAt(s.length - keep - 1))) keep++;
    const n = s.length - keep;
    if (n === 0) return STUCK;
    this.valueChunk(s.slice(0, n));
    return n;
  }

  /** A close tag (or the section's close) in the body: the call is over. */
  private closeAt(marker: string): void {
    this.closeCall(true);
    if (this.m.section && marker === this.m.section.close) {
      this.ended = true;
      return;
    }
    const i = this.m.close.indexOf(marker);
    this.closeLeft = this.m.close.slice(i + 1);
    this.state = "afterCall";
    if (this.closeLeft.length === 0) this.afterClosed();
  }

  /** After the call's last close tag: the next call in a section, or the end of the region. */
  private afterClosed(): void {
    if (this.m.section) this.restartSection();
    else this.ended = true;
  }

  private restartSection(): void {
    this.openLeft = [...this.m.open];
    this.state = "expectCall";
  }

  private afterCallStep(s: string, final: boolean): number {
    // The call is over; its remaining close tags (after whitespace) still belong to its syntax.
    const t = s.trimStart();
    const ws = s.length - t.length;
    const next = this.closeLeft[0]!;
    if (t.startsWith(next)) {
      this.closeLeft.shift();
      if (this.closeLeft.length === 0) this.afterClosed();
      return ws + next.length;
    }
    if (next.startsWith(t)) {
      if (!final) return STUCK;
      if (t !== "") {
        // The reply ended inside the call's own close tag (a reply cut after its one allowed call): still syntax.
        this.closeLeft = [];
        this.ended = true;
        return s.length;
      }
    }
    // No wrapper close: the whitespace is left to the content (or the section), which decides what it is.
    this.closeLeft = [];
    if (this.m.section) this.restartSection();
    else this.ended = true;
    return 0;
  }

  private to(state: State, consumed: number): number {
    this.state = state;
    return consumed;
  }

  private beginValue(): void {
    const fromSchema = valueKind(this.tool, this.paramName);
    this.kind = fromSchema !== "auto" ? fromSchema : (this.attributeKind ?? "auto");
    this.leadDone = false;
    this.valueText = "";
    if (this.kind === "string") this.calls.args(this.index!, `${this.keyPrefix()}"`);
  }

  private keyPrefix(): string {
    return `${this.params++ === 0 ? "" : ", "}${JSON.stringify(this.paramName)}: `;
  }

  private valueChunk(text: string): void {
    if (this.kind === "string") this.calls.args(this.index!, JSON.stringify(text).slice(1, -1));
    else this.valueText += text;
  }

  private endValue(): void {
    if (this.kind === "string") this.calls.args(this.index!, '"');
    else this.calls.args(this.index!, this.keyPrefix() + typedValue(this.kind, this.valueText));
  }

  /** Closes the arguments object (and a value cut short) and ends the call, if one is open. */
  private closeCall(complete: boolean): void {
    if (this.index === null) return;
    if (this.state === "value") this.endValue();
    this.calls.args(this.index, "}");
    this.calls.end(this.index, complete);
    this.index = null;
  }
}

function dropAllBut(s: string, keep: number): number {
  const n = s.length - keep;
  return n > 0 ? n : STUCK;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
