// Streams the text of one JSON value (a call's arguments) as the model writes it, and knows where the
// value ends. What it releases is always a prefix that finish() can close into valid JSON: commas are
// held until the next item starts (so a cut never leaves "{"a": 1,"), numbers and literals are held
// until they end (so a cut never leaves "1." or "tr"), and a split escape is held until complete.
// Small repairs keep model slips parseable: raw control characters inside strings are escaped, invalid
// escapes become a literal backslash, Python's True/False/None become JSON, and a trailing comma before
// a closing bracket is dropped.

import {isJsonWs} from "./sink.ts";

/** What the scanner expects next outside a string. */
type Ctx = "value" | "arrayFirst" | "arrayNext" | "keyFirst" | "keyNext" | "colon" | "after";

const SIMPLE_ESCAPES = "\"\\/bfnrt";
const HEX = /^[0-9a-fA-F]$/;
const TOKEN_CHAR = /^[0-9A-Za-z.+-]$/;
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const LITERALS: Record<string, string> = {true: "true", false: "false", null: "null", True: "true", False: "false", None: "null"};

export class JsonValueStream {
  /** The value is complete; chars after it are not consumed. */
  done = false;
  /** The text stopped being JSON; the offending char is not consumed. */
  failed = false;
  private started = false;
  private readonly stack: ("{" | "[")[] = [];
  private ctx: Ctx = "value";
  private inString = false;
  private isKey = false;
  private esc = "";
  private token = "";
  /** A comma (and the whitespace after it) not yet known to be followed by another item. */
  private pending = "";
  private out = "";

  /** Feeds text; returns the releasable JSON text and how many chars of `text` belong to the value. */
  push(text: string): {out: string; consumed: number} {
    let i = 0;
    while (i < text.length && !this.done && !this.failed) {
      if (this.step(text[i]!)) i++;
    }
    const out = this.out;
    this.out = "";
    return {out, consumed: i};
  }

  /** Ends the value where it is; returns the text that closes it (after anything still held). */
  finish(): string {
    // A failed value is closed like a cut one: the char that failed it was never consumed.
    if (this.done || !this.started) {
      this.done = true;
      return this.takeOut();
    }
    if (this.inString) {
      // A partial escape is dropped: it cannot be completed without inventing characters.
      this.out += '"';
      if (this.isKey) this.out += ": null";
    } else if (this.token !== "") {
      this.out += tokenText(this.token);
    } else if (this.ctx === "colon") {
      this.out += ": null";
    } else if (this.ctx === "value" && this.stack.length > 0) {
      this.out += "null";
    }
    this.done = true;
    return this.takeOut() + this.closers();
  }

  private takeOut(): string {
    const out = this.out;
    this.out = "";
    return out;
  }

  private closers(): string {
    let s = "";
    for (let i = this.stack.length - 1; i >= 0; i--) s += this.stack[i] === "{" ? "}" : "]";
    this.stack.length = 0;
    return s;
  }

  /** One char; false when it was not consumed (it must be looked at again, or it failed the value). */
  private step(c: string): boolean {
    if (this.inString) {
      this.stringChar(c);
      return true;
    }
    if (this.token !== "") {
      if (TOKEN_CHAR.test(c)) {
        this.token += c;
        return true;
      }
      this.out += tokenText(this.token);
      this.token = "";
      this.afterValue();
      return false;
    }
    if (isJsonWs(c)) {
      // Whitespace before the value is not part of it; after a comma it is held with the comma.
      if (this.started) {
        if (this.pending !== "") this.pending += c;
        else this.out += c;
      }
      return true;
    }
    switch (this.ctx) {
      case "value":
        return this.valueStart(c);
      case "arrayFirst":
      case "arrayNext":
        return c === "]" ? this.close(c) : this.valueStart(c);
      case "keyFirst":
      case "keyNext":
        if (c === '"') {
          this.flushPending();
          this.out += c;
          this.inString = true;
          this.isKey = true;
          return true;
        }
        return c === "}" ? this.close(c) : this.fail();
      case "colon":
        if (c !== ":") return this.fail();
        this.out += c;
        this.ctx = "value";
        return true;
      case "after":
        if (c === ",") {
          this.pending = c;
          this.ctx = this.stack[this.stack.length - 1] === "{" ? "keyNext" : "arrayNext";
          return true;
        }
        return c === "}" || c === "]" ? this.close(c) : this.fail();
    }
  }

  private valueStart(c: string): boolean {
    if (c === "{" || c === "[") {
      this.begin(c);
      this.stack.push(c);
      this.ctx = c === "{" ? "keyFirst" : "arrayFirst";
    } else if (c === '"') {
      this.begin(c);
      this.inString = true;
      this.isKey = false;
    } else if (/^[-0-9tfnTFN]$/.test(c)) {
      // Held whole until it ends: a cut number or literal could not be closed.
      this.flushPending();
      this.started = true;
      this.token = c;
    } else {
      return this.fail();
    }
    return true;
  }

  private begin(c: string): void {
    this.flushPending();
    this.started = true;
    this.out += c;
  }

  private close(c: string): boolean {
    const want = c === "}" ? "{" : "[";
    if (this.stack[this.stack.length - 1] !== want) return this.fail();
    this.pending = ""; // a trailing comma before the bracket is dropped
    this.out += c;
    this.stack.pop();
    this.afterValue();
    return true;
  }

  private afterValue(): void {
    if (this.stack.length === 0) this.done = true;
    else this.ctx = "after";
  }

  private flushPending(): void {
    this.out += this.pending;
    this.pending = "";
  }

  private fail(): boolean {
    this.failed = true;
    return false;
  }

  private stringChar(c: string): void {
    if (this.esc !== "") {
      if (this.esc === "\\") {
        if (c === "u") this.esc += c;
        else {
          this.out += SIMPLE_ESCAPES.includes(c) ? "\\" + c : "\\\\" + escapeControl(c);
          this.esc = "";
        }
        return;
      }
      if (HEX.test(c)) {
        this.esc += c;
        if (this.esc.length === 6) {
          this.out += this.esc;
          this.esc = "";
        }
        return;
      }
      // "\u" with too few hex digits: keep it as literal text and read c normally.
      this.out += "\\\\" + this.esc.slice(1);
      this.esc = "";
    }
    if (c === "\\") {
      this.esc = c;
    } else if (c === '"') {
      this.out += c;
      this.inString = false;
      if (this.isKey) this.ctx = "colon";
      else this.afterValue();
    } else {
      this.out += escapeControl(c);
    }
  }
}

function escapeControl(c: string): string {
  return c < " " ? JSON.stringify(c).slice(1, -1) : c;
}

/** A number or literal as JSON; anything that is neither becomes null. */
function tokenText(token: string): string {
  return LITERALS[token] ?? (NUMBER.test(token) ? token : "null");
}

/**
 * Decodes a JSON string's body char by char (the opening quote already read). Escapes are held until
 * complete; push returns the decoded text, or null at the closing quote.
 */
export class JsonStringDecoder {
  private esc = "";

  push(c: string): string | null {
    if (this.esc !== "") {
      this.esc += c;
      const need = this.esc[1] === "u" ? 6 : 2;
      if (this.esc.length < need) return "";
      const esc = this.esc;
      this.esc = "";
      try {
        return JSON.parse(`"${esc}"`) as string;
      } catch {
        return esc; // an invalid escape is kept as the literal text the model wrote
      }
    }
    if (c === "\\") {
      this.esc = c;
      return "";
    }
    return c === '"' ? null : c;
  }
}
