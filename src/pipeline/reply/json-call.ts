// Calls written as JSON objects, {"name": "...", "arguments": {...}}: the hermes form (one object inside
// <tool_call>…</tool_call>) and the generic form (a list under {"tool_calls": [...]}, the whole reply).
// The name is announced once its string closes; the arguments stream as raw JSON while they arrive.
//
// Malformed syntax: whatever sits inside the call syntax is never content. A call whose name arrived
// is ended with complete=false and its arguments closed best-effort; an object that never got a name
// announced nothing, so it is dropped without a trace.

import {JsonStringDecoder, JsonValueStream} from "./json-stream.ts";
import {type CallEmitter, type CallRegion, isJsonWs, partialMarkerLength} from "./sink.ts";

type ReaderState =
  | "open" | "key" | "keyStr" | "colon" | "value" | "nameStr" | "args" | "argsStr" | "skip" | "after"
  | "done" | "failed";

// "parameters" is what some models write instead of "arguments"; both mean the same.
const ARGS_KEYS = new Set(["arguments", "parameters"]);

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
    if (this.key === "name" && c === '"') {
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

  constructor(private readonly calls: CallEmitter) {
    this.reader = new CallObjectReader((name) => this.named(name), (text) => this.args(text));
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

const HERMES_CLOSE = "</tool_call>";

/**
 * After <tool_call>: a JSON call object, then </tool_call>. Some models put several objects in one
 * tag, so further objects are read too. Anything else before the close tag is syntax and is dropped.
 */
export class HermesRegion implements CallRegion {
  ended = false;
  private state: "object" | "between" | "junk" = "object";
  private call: JsonCall;

  constructor(private readonly calls: CallEmitter) {
    this.call = new JsonCall(calls);
  }

  feed(text: string, final: boolean): number {
    let i = 0;
    for (;;) {
      switch (this.state) {
        case "object":
          i += this.call.feed(i === 0 ? text : text.slice(i));
          if (!this.call.done && !this.call.failed) return i;
          // Over, or broken (e.g. "</tool_call>" where a brace was due): end the call now.
          this.call.end();
          this.state = this.call.done ? "between" : "junk";
          break;
        case "between":
          while (i < text.length && isJsonWs(text[i]!)) i++;
          if (i === text.length) return i;
          if (text[i] === "{") {
            this.call = new JsonCall(this.calls);
            this.state = "object";
          } else this.state = "junk";
          break;
        case "junk": {
          const at = text.indexOf(HERMES_CLOSE, i);
          if (at >= 0) {
            this.ended = true;
            return at + HERMES_CLOSE.length;
          }
          return text.length - (final ? 0 : partialMarkerLength(text.slice(i), [HERMES_CLOSE]));
        }
      }
    }
  }

  finish(): void {
    this.call.end();
    this.ended = true;
  }
}

/**
 * After <tool_call> when the syntax's own form may not be what the model wrote: Qwen models trained on
 * both forms sometimes write a JSON object where XML was due, and the other way round. The first
 * non-whitespace char decides.
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

/**
 * After the generic opener {"tool_calls": [ : call objects separated by commas, then ]}. The form is
 * the whole reply, so anything after it, or after a break in it, is dropped rather than shown.
 */
export class GenericRegion implements CallRegion {
  readonly ended = false;
  private state: "items" | "call" | "between" | "close" | "tail" = "items";
  private call: JsonCall | null = null;

  constructor(private readonly calls: CallEmitter) {}

  feed(text: string): number {
    let i = 0;
    while (i < text.length) {
      const c = text[i]!;
      switch (this.state) {
        case "items":
          if (isJsonWs(c) || c === ",") i++;
          else if (c === "{") {
            this.call = new JsonCall(this.calls);
            this.state = "call";
          } else if (c === "]") {
            this.state = "close";
            i++;
          } else this.state = "tail";
          break;
        case "call": {
          const call = this.call!;
          i += call.feed(i === 0 ? text : text.slice(i));
          if (call.done || call.failed) {
            call.end();
            this.state = call.done ? "between" : "tail";
          }
          break;
        }
        case "between":
          if (isJsonWs(c)) i++;
          else if (c === "," || c === "]") {
            this.state = c === "," ? "items" : "close";
            i++;
          } else this.state = "tail";
          break;
        case "close":
          if (isJsonWs(c)) i++;
          else this.state = "tail"; // "}" or not, the list is over
          break;
        case "tail":
          i = text.length;
          break;
      }
    }
    return i;
  }

  finish(): void {
    this.call?.end();
  }
}
