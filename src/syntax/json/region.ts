// Calls written as JSON objects holding the name and the arguments (the `json` CallSyntax): Hermes (one object
// inside <tool_call>…</tool_call>), lists after an opener (Nemotron <TOOLCALL>[...]</TOOLCALL>, Mistral Nemo,
// Granite 3.3, Command R, Apriel), Llama 3's bare object, and the generic form (a list under
// {"tool_calls": [...]}, the whole reply). The name is announced once its string closes; the arguments stream
// as raw JSON while they arrive.
//
// Malformed syntax: whatever sits inside the call syntax is never content. A call whose name arrived
// is ended with complete=false and its arguments closed best-effort; an object that never got a name
// announced nothing, so it is dropped without a trace.

import {JsonStringDecoder, JsonValueStream} from "../reply/json-stream.ts";
import {type CallEmitter, type CallRegion, isJsonWs, partialMarkerLength} from "../reply/sink.ts";

type ReaderState =
  | "open" | "key" | "keyStr" | "colon" | "value" | "nameStr" | "args" | "argsStr" | "skip" | "after"
  | "done" | "failed";

// "parameters" is what Llama 3 and Command R write (and some models write instead of "arguments"); "tool_name"
// is Command R's name key. Other keys (ids) are read and ignored.
const ARGS_KEYS = new Set(["arguments", "parameters"]);
const NAME_KEYS = new Set(["name", "tool_name"]);

/** Reads one call object char by char; reports the name and the argument text as they are known. */
class CallObjectReader {
  state: ReaderState = "open";
  private raw = "";
  private rawEscaped = false;
  private key = "";
  private argsSeen = false;
  private value: JsonValueStream | null = null;
  /** The arguments value while it is open (also when it broke: it still needs closing). */
  private openArgs: JsonValueStream | null = null;
  private decoder: JsonStringDecoder | null = null;

  constructor(
    private readonly onName: (name: string) => void,
    private readonly onArgs: (text: string) => void,
    /** The object's first key is the name and its value the arguments (Apertus). */
    private readonly keyedByName = false,
  ) {}

  /** Returns how many chars belong to the object; stops at its end or at the first char that breaks it. */
  feed(text: string): number {
    let i = 0;
    while (i < text.length && this.state !== "done" && this.state !== "failed") i += this.step(text, i);
    return i;
  }

  /** Text that closes the arguments if the object was cut inside them. */
  closing(): string {
    return this.openArgs?.finish() ?? "";
  }

  /** Consumes some chars at i; returns 0 only together with a state change. */
  private step(text: string, i: number): number {
    const c = text[i]!;
    switch (this.state) {
      case "open":
        if (isJsonWs(c)) return 1;
        return c === "{" ? this.to("key", 1) : this.to("failed", 0);
      case "key":
        if (isJsonWs(c) || c === ",") return 1;
        if (c === '"') {
          this.raw = "";
          return this.to("keyStr", 1);
        }
        return c === "}" ? this.to("done", 1) : this.to("failed", 0);
      case "keyStr":
      case "nameStr":
        return this.rawStringChar(c);
      case "colon":
        if (isJsonWs(c)) return 1;
        return c === ":" ? this.to("value", 1) : this.to("failed", 0);
      case "value":
        return isJsonWs(c) ? 1 : this.valueStart(c);
      case "args":
      case "skip": {
        const value = this.value!;
        const r = value.push(i === 0 ? text : text.slice(i));
        if (this.state === "args") this.onArgs(r.out);
        if (value.failed) this.state = "failed";
        else if (value.done) {
          this.openArgs = null;
          this.state = "after";
        }
        return r.consumed;
      }
      case "argsStr": {
        const decoded = this.decoder!.push(c);
        const value = this.value!;
        if (decoded === null) {
          this.openArgs = null;
          this.onArgs(value.finish());
          return this.to("after", 1);
        }
        // Anything after the embedded JSON value inside the string is ignored.
        if (decoded !== "" && !value.done && !value.failed) this.onArgs(value.push(decoded).out);
        return 1;
      }
      case "after":
        if (isJsonWs(c)) return 1;
        if (c === ",") return this.to("key", 1);
        return c === "}" ? this.to("done", 1) : this.to("failed", 0);
      case "done":
      case "failed":
        return 0;
    }
  }

  private to(state: ReaderState, consumed: number): number {
    this.state = state;
    return consumed;
  }

  private valueStart(c: string): number {
    if (NAME_KEYS.has(this.key) && c === '"') {
      this.raw = "";
      return this.to("nameStr", 1);
    }
    this.value = new JsonValueStream();
    if (ARGS_KEYS.has(this.key) && !this.argsSeen) {
      this.argsSeen = true;
      if (c === "{" || c === "[") {
        this.openArgs = this.value;
        return this.to("args", 0);
      }
      if (c === '"') {
        // Arguments given as a string holding JSON: passed through decoded.
        this.openArgs = this.value;
        this.decoder = new JsonStringDecoder();
        return this.to("argsStr", 1);
      }
      // null or another scalar: no arguments (the call gets "{}").
    }
    return this.to("skip", 0);
  }

  /** Keys and the name are short: kept raw until the closing quote, then decoded whole. */
  private rawStringChar(c: string): number {
    if (this.rawEscaped) this.rawEscaped = false;
    else if (c === "\\") this.rawEscaped = true;
    else if (c === '"') {
      let s: string;
      try {
        s = JSON.parse(`"${this.raw}"`) as string;
      } catch {
        s = this.raw;
      }
      if (this.state === "keyStr") {
        this.key = s;
        if (this.keyedByName && !this.argsSeen && !NAME_KEYS.has(s) && !ARGS_KEYS.has(s)) {
          this.onName(s);
          this.key = "arguments";
        }
        return this.to("colon", 1);
      }
      this.onName(s);
      return this.to("after", 1);
    }
    this.raw += c;
    return 1;
  }
}

/** One call object, mapped onto parts. Arguments that come before the name are held until it arrives. */
export class JsonCall {
  private index: number | null = null;
  private held = "";
  private anyArgs = false;
  private ended = false;
  private readonly reader: CallObjectReader;

  constructor(private readonly calls: CallEmitter, keyedByName = false) {
    this.reader = new CallObjectReader((name) => this.named(name), (text) => this.args(text), keyedByName);
  }

  get done(): boolean {
    return this.reader.state === "done";
  }

  get failed(): boolean {
    return this.reader.state === "failed";
  }

  feed(text: string): number {
    return this.reader.feed(text);
  }

  /** Ends the call: complete if its object closed, otherwise its arguments are closed best-effort. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    const complete = this.done;
    if (!complete) this.args(this.reader.closing());
    if (this.index === null) return;
    if (!this.anyArgs) this.calls.args(this.index, "{}");
    this.calls.end(this.index, complete);
  }

  private named(name: string): void {
    if (this.index !== null) return; // a second "name" key is ignored
    this.index = this.calls.start(name);
    if (this.held !== "") this.calls.args(this.index, this.held);
    this.held = "";
  }

  private args(text: string): void {
    if (text === "") return;
    this.anyArgs = true;
    if (this.index === null) this.held += text;
    else this.calls.args(this.index, text);
  }
}

export interface JsonRegionOptions {
  /** Closes the region after the object(s) or the list ("" = nothing does). */
  close: string;
  /** The form is the whole reply (the generic form): anything after it, or after a break in it, is dropped. */
  wholeReply: boolean;
  /** The region starts inside the list (the generic form's consumed `{"tool_calls": [`). */
  inList: boolean;
  /** Call objects keyed by the tool's name (JsonCallSyntax.keyedByName). */
  keyedByName?: boolean;
}

/**
 * After a JSON syntax's opener: call objects, or a list of them, then the close marker. Some models put several
 * objects in one Hermes tag, so further objects are read too (separated by whitespace, or `;` as Llama 3 does).
 * Anything else before the close marker is syntax and is dropped; with no close marker, the region ends there.
 */
export class JsonCallsRegion implements CallRegion {
  ended = false;
  private state: "items" | "object" | "between" | "listClosed" | "junk" | "tail" = "items";
  private inList: boolean;
  private call: JsonCall | null = null;

  constructor(private readonly calls: CallEmitter, private readonly opts: JsonRegionOptions) {
    this.inList = opts.inList;
  }

  feed(text: string, final: boolean): number {
    let i = 0;
    while (!this.ended) {
      switch (this.state) {
        case "object": {
          const call = this.call!;
          i += call.feed(i === 0 ? text : text.slice(i));
          if (!call.done && !call.failed) return i;
          // Over, or broken (e.g. the close tag where a brace was due): end the call now.
          call.end();
          this.state = call.done ? "between" : "junk";
          continue;
        }
        case "junk":
          return i + this.junk(text.slice(i), final);
        case "tail":
          return text.length;
        default:
          break;
      }
      while (i < text.length && isJsonWs(text[i]!)) i++;
      if (i === text.length) return i;
      const rest = text.slice(i);
      const {close} = this.opts;
      // The close marker ends the region after an object (not in a list) or after the list.
      const mayClose = close !== "" && (this.state === "listClosed" || !this.inList);
      if (mayClose && rest.startsWith(close)) {
        i += close.length;
        this.closed();
        continue;
      }
      if (mayClose && !final && close.startsWith(rest)) return i;
      const c = rest[0]!;
      if (this.state === "items") {
        if (c === "{") this.startObject();
        else if (this.inList && c === ",") i++;
        else if (this.inList && c === "]") {
          this.state = "listClosed";
          i++;
        } else if (!this.inList && c === "[") {
          this.inList = true;
          i++;
        } else if (!this.inList && c === ";") i++;
        else this.state = "junk";
      } else if (this.state === "between") {
        if (this.inList && (c === "," || c === "]")) {
          this.state = c === "," ? "items" : "listClosed";
          i++;
        } else if (!this.inList && (c === "{" || c === ";")) this.state = "items";
        else this.state = "junk";
      } else {
        // listClosed, and no close marker follows
        this.state = "junk";
      }
      if (this.state === "listClosed" && close === "") this.closed();
    }
    return i;
  }

  private closed(): void {
    if (this.opts.wholeReply) this.state = "tail";
    else this.ended = true;
  }

  /** What follows a break: dropped up to the close marker; with no marker the region ends (the rest is content). */
  private junk(text: string, final: boolean): number {
    if (this.opts.wholeReply) {
      this.state = "tail";
      return text.length;
    }
    const {close} = this.opts;
    if (close === "") {
      this.ended = true;
      return 0;
    }
    const at = text.indexOf(close);
    if (at >= 0) {
      this.ended = true;
      return at + close.length;
    }
    return text.length - (final ? 0 : partialMarkerLength(text, [close]));
  }

  private startObject(): void {
    this.call = new JsonCall(this.calls, this.opts.keyedByName === true);
    this.state = "object";
  }

  finish(): void {
    this.call?.end();
    this.ended = true;
  }
}

/**
 * After an opener whose syntax may not be what the model wrote: Qwen models trained on both forms sometimes
 * write a JSON object where XML was due, and the other way round. The first non-whitespace char decides.
 */
export class TaggedCallRegion implements CallRegion {
  private inner: CallRegion | null = null;

  constructor(
    private readonly json: () => CallRegion,
    private readonly xml: () => CallRegion,
  ) {}

  get ended(): boolean {
    return this.inner?.ended ?? false;
  }

  feed(text: string, final: boolean): number {
    if (this.inner === null) {
      const t = text.trimStart();
      if (t === "" && !final) return 0;
      this.inner = t.startsWith("{") ? this.json() : this.xml();
    }
    return this.inner.feed(text, final);
  }

  finish(): void {
    this.inner?.finish();
  }
}
