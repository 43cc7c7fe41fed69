// MiniMax M3's calls, read after the section's opener (`M<tool_call>`, M the mark): `M<invoke name="NAME">`, one
// element per parameter, `M</invoke>`, more calls, then `M</tool_call>`. A parameter's value is its text, or nested
// elements: an object's members named after their keys, an array's items each in an `item` element. Values are typed by
// the tool's schema where it has one (a string stays text, a number is parsed), else by what the text looks like (as
// the xml shape does). Each parameter's JSON is released when its end tag arrives.
//   M<tool_call>\nM<invoke name="get_weather">M<city>ParisM</city>M<opts>M<unit>cM</unit>M</opts>M</invoke>\nM</tool_call>

import type {TaggedCallSyntax} from "../../core/call-syntax.ts";
import type {ReplyToolSpec} from "../reply/parts.ts";
import {type CallEmitter, type CallRegion, partialMarkerLength} from "../reply/sink.ts";
import {schemaKind, typedValue} from "../xml/values.ts";

/** An element being read: its name, its text, and its children. */
interface Element {
  name: string;
  text: string;
  children: Element[];
}

/** Longer than this without a tag's `>`: not a tag. */
const TAG_LIMIT = 256;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export class TaggedCallsRegion implements CallRegion {
  ended = false;
  private state: "calls" | "args" | "junk" = "calls";
  private index: number | null = null;
  private tool: ReplyToolSpec | undefined;
  /** Open elements of the current parameter, outermost first. */
  private stack: Element[] = [];
  private written = 0;
  /** The call's end tag as read between `<` and `>`: "/invoke". */
  private readonly closeTag: string;

  constructor(private readonly calls: CallEmitter, private readonly s: TaggedCallSyntax, private readonly tools: readonly ReplyToolSpec[]) {
    this.closeTag = s.close.trim().slice(1, -1);
  }

  feed(text: string, final: boolean): number {
    const m = this.s.mark;
    let i = 0;
    while (!this.ended) {
      const rest = text.slice(i);
      if (this.state === "junk") {
        // Dropped up to the section's close.
        const close = m + this.s.section.close;
        const at = rest.indexOf(close);
        if (at >= 0) {
          this.ended = true;
          return i + at + close.length;
        }
        return i + rest.length - (final ? 0 : partialMarkerLength(rest, [close]));
      }
      if (this.state === "calls") {
        const t = rest.trimStart();
        const ws = rest.length - t.length;
        const close = m + this.s.section.close;
        if (t.startsWith(close)) {
          this.ended = true;
          return i + ws + close.length;
        }
        const open = m + this.s.open;
        if (t.startsWith(open)) {
          const end = t.indexOf(this.s.nameEnd, open.length);
          if (end < 0) {
            if (!final && t.length < open.length + TAG_LIMIT) return i;
            this.state = "junk";
            continue;
          }
          const name = t.slice(open.length, end);
          this.index = this.calls.start(name);
          this.tool = this.tools.find((x) => x.name === name);
          this.written = 0;
          this.stack = [];
          this.state = "args";
          i += ws + end + this.s.nameEnd.length;
          continue;
        }
        if (!final && (t === "" || close.startsWith(t) || open.startsWith(t))) return i;
        // Something else after a call (or no call at all): the region ends; what follows is content.
        this.ended = true;
        return i;
      }
      // args: text and tags of the current call.
      const at = rest.indexOf(m);
      if (at < 0) {
        const keep = final ? 0 : partialMarkerLength(rest, [m]);
        this.addText(rest.slice(0, rest.length - keep));
        return i + rest.length - keep;
      }
      this.addText(rest.slice(0, at));
      const end = rest.indexOf(">", at + m.length);
      if (end < 0 || rest[at + m.length] !== "<") {
        if (end < 0 && !final && rest.length - at < m.length + TAG_LIMIT) return i + at;
        this.fail();
        continue;
      }
      const tag = rest.slice(at + m.length + 1, end);
      i += end + 1;
      if (!this.tag(tag)) this.fail();
    }
    return i;
  }

  finish(): void {
    if (this.index !== null) {
      if (this.written === 0) this.calls.args(this.index, "{");
      this.calls.args(this.index, "}");
      this.calls.end(this.index, false);
      this.index = null;
    }
    this.ended = true;
  }

  private addText(text: string): void {
    const top = this.stack.at(-1);
    if (top) top.text += text;
  }

  /** A start or end tag inside a call; false when it breaks the call. */
  private tag(tag: string): boolean {
    if (tag === this.closeTag && this.stack.length === 0) {
      // The call's close (`</invoke>`): its layout newline is read as whitespace before the next call.
      this.calls.args(this.index!, this.written === 0 ? "{}" : "}");
      this.calls.end(this.index!, true);
      this.index = null;
      this.state = "calls";
      return true;
    }
    if (tag.startsWith("/")) {
      const el = this.stack.pop();
      if (el === undefined || el.name !== tag.slice(1)) return false;
      if (this.stack.length > 0) {
        this.stack.at(-1)!.children.push(el);
        return true;
      }
      const props = isObject(this.tool?.parameters) ? this.tool!.parameters.properties : undefined;
      const schema = isObject(props) ? props[el.name] : undefined;
      this.calls.args(this.index!, `${this.written === 0 ? "{" : ", "}${JSON.stringify(el.name)}: ${JSON.stringify(this.value(el, schema))}`);
      this.written++;
      return true;
    }
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(tag)) return false;
    this.stack.push({name: tag, text: "", children: []});
    return true;
  }

  /** An element's value as JSON, typed by its schema (undefined: by what it looks like). */
  private value(el: Element, schema: unknown): unknown {
    const s = isObject(schema) ? schema : undefined;
    if (el.children.length > 0) {
      const items = s?.type === "array" || (s?.type !== "object" && el.children.every((c) => c.name === this.s.item));
      if (items) return el.children.map((c) => this.value(c, s?.items));
      const props = isObject(s?.properties) ? s.properties : undefined;
      return Object.fromEntries(el.children.map((c) => [c.name, this.value(c, props?.[c.name])]));
    }
    // An empty container, as a schema declares it; otherwise the text, typed.
    if (el.text === "" && s?.type === "array") return [];
    if (el.text === "" && s?.type === "object") return {};
    return JSON.parse(typedValue(s ? schemaKind(s) : "auto", el.text));
  }

  /** The call breaks: it ends incomplete (its arguments closed as they stand), and the rest of the section is dropped. */
  private fail(): void {
    if (this.index !== null) {
      this.calls.args(this.index, this.written === 0 ? "{}" : "}");
      this.calls.end(this.index, false);
      this.index = null;
    }
    this.state = "junk";
  }
}
