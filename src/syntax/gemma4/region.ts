// Gemma 4 calls: `<|tool_call>call:NAME{ARGS}<tool_call|>`, ARGS in Gemma's own notation, turned into JSON as
// it streams: keys are bare (`city:`), strings sit between `<|"|>` marks and hold no escapes, numbers, true,
// false and null are plain, objects and arrays nest with `{}` and `[]`, items are separated by commas.
//   <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>

import {type CallEmitter, type CallRegion, partialMarkerLength} from "../reply/sink.ts";

export const GEMMA_CALL_OPEN = "<|tool_call>";
export const GEMMA_CALL_CLOSE = "<tool_call|>";
const QUOTE = '<|"|>';
const NAME_LIMIT = 256;

/** Gemma's argument notation to JSON text, char by char; what it returns can always be closed by finish(). */
export class GemmaArgs {
  done = false;
  failed = false;
  private readonly stack: ("{" | "[")[] = [];
  private expect: "value" | "key" | "colon" | "after" = "value";
  private inString = false;
  private key = "";
  private inKey = false;
  private token = "";
  /** A comma not yet known to be followed by another item. */
  private comma = false;

  /** Returns [JSON text, chars consumed]; stops at the end of the outer object or at a char that breaks it. */
  push(text: string, final: boolean): [string, number] {
    let out = "";
    let i = 0;
    while (i < text.length && !this.done && !this.failed) {
      const rest = text.slice(i);
      if (this.inString) {
        const at = rest.indexOf(QUOTE);
        if (at < 0) {
          const keep = final ? 0 : partialMarkerLength(rest, [QUOTE]);
          out += JSON.stringify(rest.slice(0, rest.length - keep)).slice(1, -1);
          i += rest.length - keep;
          if (keep > 0) break;
          continue;
        }
        out += JSON.stringify(rest.slice(0, at)).slice(1, -1) + '"';
        i += at + QUOTE.length;
        this.inString = false;
        this.afterValue();
        continue;
      }
      if (rest.startsWith(QUOTE) && this.expect === "value") {
        out += this.flushComma() + '"';
        this.inString = true;
        i += QUOTE.length;
        continue;
      }
      if (!final && QUOTE.startsWith(rest) && this.expect === "value") break;
      const c = rest[0]!;
      i++;
      out += this.char(c);
    }
    if (final && this.token !== "") out += this.endToken();
    return [out, i];
  }

  private char(c: string): string {
    if (this.inKey) {
      if (/[A-Za-z0-9_\-.]/.test(c)) {
        this.key += c;
        return "";
      }
      this.inKey = false;
      this.expect = "colon";
      return this.char(c);
    }
    if (this.token !== "") {
      if (/[A-Za-z0-9.+\-eE]/.test(c)) {
        this.token += c;
        return "";
      }
      return this.endToken() + this.char(c);
    }
    if (c === " " || c === "\n" || c === "\t") return "";
    switch (this.expect) {
      case "key":
        if (c === "}") return this.close("}");
        if (/[A-Za-z0-9_]/.test(c)) {
          this.inKey = true;
          this.key = c;
          return "";
        }
        return this.fail();
      case "colon":
        if (c !== ":") return this.fail();
        this.expect = "value";
        return `${this.flushComma()}${JSON.stringify(this.key)}:`;
      case "value":
        if (c === "{" || c === "[") {
          this.stack.push(c);
          const open = this.flushComma() + c;
          this.expect = c === "{" ? "key" : "value";
          return open;
        }
        if (c === "]" && this.stack[this.stack.length - 1] === "[") return this.close("]");
        if (/[-0-9tfn]/.test(c)) {
          this.token = c;
          return "";
        }
        return this.fail();
      case "after":
        if (c === ",") {
          this.comma = true;
          this.expect = this.stack[this.stack.length - 1] === "{" ? "key" : "value";
          return "";
        }
        if (c === "}" || c === "]") return this.close(c);
        return this.fail();
    }
  }

  private endToken(): string {
    const t = this.token;
    this.token = "";
    const json = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) || t === "true" || t === "false" || t === "null" ? t : JSON.stringify(t);
    const out = this.flushComma() + json;
    this.afterValue();
    return out;
  }

  private flushComma(): string {
    if (!this.comma) return "";
    this.comma = false;
    return ",";
  }

  private close(c: "}" | "]"): string {
    const open = this.stack.pop();
    if ((open === "{") !== (c === "}")) return this.fail();
    this.comma = false; // a trailing comma is dropped
    this.afterValue();
    return c;
  }

  private afterValue(): void {
    this.expect = "after";
    if (this.stack.length === 0) this.done = true;
  }

  private fail(): string {
    this.failed = true;
    return "";
  }

  /** Text that closes what is open (a cut string, a key without its value, the containers). */
  finish(): string {
    let out = "";
    if (this.inString) out += '"';
    else if (this.token !== "") out += this.endToken();
    if (this.expect === "colon" || this.inKey) out += `${this.flushComma()}${JSON.stringify(this.key)}:null`;
    else if (this.expect === "value" && this.stack[this.stack.length - 1] === "{") out += "null";
    for (let i = this.stack.length - 1; i >= 0; i--) out += this.stack[i] === "{" ? "}" : "]";
    this.stack.length = 0;
    this.done = true;
    return out;
  }
}

/** After `<|tool_call>`: `call:`, the name, the arguments, `<tool_call|>`. */
export class Gemma4CallRegion implements CallRegion {
  ended = false;
  private state: "name" | "args" | "close" | "junk" = "name";
  private index: number | null = null;
  private args: GemmaArgs | null = null;

  constructor(private readonly calls: CallEmitter) {}

  feed(text: string, final: boolean): number {
    let i = 0;
    while (!this.ended) {
      const s = text.slice(i);
      if (this.state === "name") {
        const brace = s.indexOf("{");
        if (brace < 0) {
          if (!final && s.length < NAME_LIMIT && !s.includes(GEMMA_CALL_CLOSE)) return i;
          this.state = "junk";
          continue;
        }
        const name = s.slice(0, brace).trim().replace(/^call:/, "").trim();
        if (name === "" || /[\s<>"]/.test(name)) {
          this.state = "junk";
          continue;
        }
        this.index = this.calls.start(name);
        this.args = new GemmaArgs();
        this.state = "args";
        i += brace;
        continue;
      }
      if (this.state === "args") {
        const args = this.args!;
        const [out, n] = args.push(s, final);
        if (out !== "") this.calls.args(this.index!, out);
        i += n;
        if (args.failed) {
          this.endCall(false);
          this.state = "junk";
          continue;
        }
        if (!args.done) return i;
        this.state = "close";
        continue;
      }
      const at = s.indexOf(GEMMA_CALL_CLOSE);
      if (this.state === "close") {
        const t = s.trimStart();
        if (t.startsWith(GEMMA_CALL_CLOSE)) {
          this.endCall(true);
          this.ended = true;
          return i + (s.length - t.length) + GEMMA_CALL_CLOSE.length;
        }
        if (!final && GEMMA_CALL_CLOSE.startsWith(t)) return i;
        // The close tag is missing: the call ends with its arguments; what follows is content.
        this.endCall(true);
        this.ended = true;
        return i;
      }
      // junk: dropped up to the close tag
      if (at >= 0) {
        this.ended = true;
        return i + at + GEMMA_CALL_CLOSE.length;
      }
      return i + s.length - (final ? 0 : partialMarkerLength(s, [GEMMA_CALL_CLOSE]));
    }
    return i;
  }

  finish(): void {
    this.endCall(false);
    this.ended = true;
  }

  private endCall(complete: boolean): void {
    if (this.index === null) return;
    const args = this.args;
    if (args && !args.done) this.calls.args(this.index, args.finish());
    this.calls.end(this.index, complete);
    this.index = null;
  }
}
