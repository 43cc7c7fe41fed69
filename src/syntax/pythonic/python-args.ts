// A pythonic call's arguments, `key=value, ...` up to the call's `)`, turned into the JSON text of an object as it
// streams. Values are Python or JSON literals: strings in '...' or "..." with Python's escapes, numbers, True/False/None
// (and true/false/null), lists and tuples (both JSON arrays) and dicts with string keys, nested to any depth.
//   city="Paris", days=2, opts={'a': [1, 2.5, None], "b": (True,)})   ->   {"city": "Paris", "days": 2, "opts": {...}}
// String contents are released as they arrive; numbers and literals are held until they end, and a comma until the
// next item starts, so what was released can always be closed into valid JSON by finish().
// Not read (the call is malformed): positional arguments, bare names, non-string dict keys, expressions. A parenthesized
// single value `(1)` is read as a one-item tuple (a model that means a tuple writes its comma; `(1)` itself is rare).

import {isJsonWs, partialMarkerLength} from "../reply/sink.ts";

/** What encloses the current position: the call's argument list, or a value's container. */
type Frame = "args" | "dict" | "list" | "tuple";
/** What comes next outside a string: a key (args: an identifier, dict: a string), `=` or `:`, a value, `,` or a closer. */
type Expect = "key" | "sep" | "value" | "after";

const PY_CLOSER: Record<Frame, string> = {args: ")", dict: "}", list: "]", tuple: ")"};
const JSON_CLOSER: Record<Frame, string> = {args: "}", dict: "}", list: "]", tuple: "]"};
const IDENT_START = /[A-Za-z_]/;
const IDENT_CHAR = /[A-Za-z0-9_]/;
const TOKEN_START = /[-+0-9.A-Za-z_]/;
const TOKEN_CHAR = /[-+0-9.A-Za-z_]/;
const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const LITERALS: Record<string, string> = {True: "true", False: "false", None: "null", true: "true", false: "false", null: "null"};
/** Python's one-char escapes; any other escaped char keeps its backslash (as Python does). */
const SIMPLE: Record<string, string> = {"\\": "\\", "'": "'", '"': '"', n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", a: "\x07", v: "\x0b", "\n": ""};
const HEX_DIGITS: Record<string, number> = {x: 2, u: 4, U: 8};

export class PythonArgs {
  /** The argument list closed with its `)`; chars after it are not consumed. */
  done = false;
  /** The text stopped being a Python argument list; the offending char is not consumed. */
  failed = false;
  private readonly stack: Frame[] = ["args"];
  private expect: Expect = "key";
  /** The quote of the string being read, or "" outside strings. */
  private quote = "";
  private stringIsKey = false;
  /** A high surrogate waiting for its low half. */
  private high = "";
  /** An argument name being read, then waiting for its `=` (it is written with the `=`). */
  private ident = "";
  private identDone = false;
  private token = "";
  /** A comma not yet known to be followed by another item (a trailing one is dropped). */
  private comma = false;

  /** `stop`: the region's close marker; met inside a string it breaks the arguments (the model ended the call there). */
  constructor(private readonly stop: string) {}

  /** The JSON text that opens the arguments object, written as soon as the call starts. */
  open(): string {
    return "{";
  }

  /** Returns [JSON text, chars consumed]; stops after the argument list's `)` or before a char that breaks it. */
  push(text: string, final: boolean): [string, number] {
    let out = "";
    let i = 0;
    while (i < text.length && !this.done && !this.failed) {
      if (this.quote !== "") {
        const [s, n, held] = this.string(text, i, final);
        out += s;
        i += n;
        if (held) break;
        continue;
      }
      const [s, eat] = this.char(text[i]!);
      out += s;
      if (eat) i++;
    }
    if (final && this.token !== "" && !this.failed) out += this.endToken();
    return [out, i];
  }

  /** Text that closes what is open: a cut string, a key without its value, the containers. */
  finish(): string {
    if (this.done) return "";
    let out = "";
    if (this.quote !== "") {
      out += jsonText(this.high) + '"';
      if (this.stringIsKey) out += ": null";
    } else if (this.token !== "") {
      const json = tokenJson(this.token);
      out += this.flushComma() + (json ?? "null");
    } else if (this.ident !== "") {
      out += `${this.flushComma()}${JSON.stringify(this.ident)}: null`;
    } else if (this.expect === "sep") {
      out += ": null"; // a dict key was written; its value is missing
    } else if (this.expect === "value" && (this.top === "dict" || this.top === "args")) {
      out += "null";
    }
    for (let k = this.stack.length - 1; k >= 0; k--) out += JSON_CLOSER[this.stack[k]!];
    this.stack.length = 0;
    this.done = true;
    return out;
  }

  private get top(): Frame {
    return this.stack[this.stack.length - 1]!;
  }

  /** One char outside strings: [JSON text, whether the char was consumed]. */
  private char(c: string): [string, boolean] {
    if (this.ident !== "" && !this.identDone) {
      if (IDENT_CHAR.test(c)) {
        this.ident += c;
        return ["", true];
      }
      this.identDone = true;
      this.expect = "sep";
    }
    if (this.token !== "") {
      if (TOKEN_CHAR.test(c)) {
        this.token += c;
        return ["", true];
      }
      const out = this.endToken();
      if (this.failed) return ["", false];
      return [out, false];
    }
    if (isJsonWs(c)) return ["", true];
    switch (this.expect) {
      case "key":
        if (c === PY_CLOSER[this.top]) return [this.close(), true];
        if (this.top === "args" && IDENT_START.test(c)) {
          this.ident = c;
          this.identDone = false;
          return ["", true];
        }
        if (this.top === "dict" && (c === "'" || c === '"')) return [this.openString(c, true), true];
        return this.fail();
      case "sep":
        if (this.top === "args" && c === "=") {
          const key = `${this.flushComma()}${JSON.stringify(this.ident)}: `;
          this.ident = "";
          this.expect = "value";
          return [key, true];
        }
        if (this.top === "dict" && c === ":") {
          this.expect = "value";
          return [": ", true];
        }
        return this.fail();
      case "value":
        if (c === "'" || c === '"') return [this.openString(c, false), true];
        if (c === "[" || c === "(" || c === "{") {
          const frame: Frame = c === "[" ? "list" : c === "(" ? "tuple" : "dict";
          const open = this.flushComma() + (frame === "dict" ? "{" : "[");
          this.stack.push(frame);
          this.expect = frame === "dict" ? "key" : "value";
          return [open, true];
        }
        // An empty list or tuple, or one with a trailing comma.
        if ((this.top === "list" || this.top === "tuple") && c === PY_CLOSER[this.top]) return [this.close(), true];
        if (TOKEN_START.test(c)) {
          this.token = c;
          return ["", true];
        }
        return this.fail();
      case "after":
        if (c === ",") {
          this.comma = true;
          this.expect = this.top === "list" || this.top === "tuple" ? "value" : "key";
          return ["", true];
        }
        if (c === PY_CLOSER[this.top]) return [this.close(), true];
        return this.fail();
    }
  }

  private openString(quote: string, isKey: boolean): string {
    this.quote = quote;
    this.stringIsKey = isKey;
    return this.flushComma() + '"';
  }

  /**
   * Inside a string, from s[at]: decodes what can be decided. Returns [JSON text, chars consumed, held]; held means
   * the rest of `s` cannot be decided yet (a split escape, the start of the stop marker) and waits for more text.
   */
  private string(s: string, at: number, final: boolean): [string, number, boolean] {
    // A tail that could be the start of the stop marker waits; with `final` nothing more comes to complete anything.
    const end = final ? s.length : s.length - partialMarkerLength(s, [this.stop]);
    const stop0 = this.stop === "" ? "" : this.stop[0]!;
    let text = "";
    let j = at;
    while (j < end) {
      const c = s[j]!;
      if (c === this.quote) {
        this.quote = "";
        this.expect = this.stringIsKey ? "sep" : "after";
        return [this.release(text, true) + '"', j + 1 - at, false];
      }
      // The close marker inside a string: the model ended the call there (the marker is left for the region).
      if (c === stop0 && s.startsWith(this.stop, j)) return this.cutString(text, j - at);
      if (c !== "\\") {
        text += c;
        j++;
        continue;
      }
      if (stop0 !== "" && s.startsWith(this.stop, j + 1)) return this.cutString(text, j - at);
      const esc = decodeEscape(s, j, end);
      if (esc === null) {
        // It needs chars past `end`: wait for them, unless nothing more can come (a cut escape breaks the string).
        if (!final) return [this.release(text, false), j - at, true];
        return this.cutString(text, j - at);
      }
      // A malformed \x, \u or \U escape is a syntax error in Python.
      if (esc.text === undefined) return this.cutString(text, j - at);
      text += esc.text;
      j += esc.length;
    }
    return [this.release(text, false), j - at, end < s.length];
  }

  /** The string breaks at what was consumed: the arguments failed (finish() closes the string). */
  private cutString(text: string, consumed: number): [string, number, boolean] {
    this.failed = true;
    return [this.release(text, true), consumed, true];
  }

  /**
   * Decoded string text as JSON. A high surrogate at the end waits for its pair (a `\ud83d\ude00` or a raw pair
   * split between chunks), so every chunking writes the same JSON text.
   */
  private release(text: string, last: boolean): string {
    let all = this.high + text;
    this.high = "";
    const code = all.charCodeAt(all.length - 1);
    if (!last && code >= 0xd800 && code <= 0xdbff) {
      this.high = all.slice(-1);
      all = all.slice(0, -1);
    }
    return jsonText(all);
  }

  private endToken(): string {
    const json = tokenJson(this.token);
    if (json === null) {
      // A bare name (`city=Paris`) or an unknown literal: Python could not evaluate it.
      this.token = "";
      this.failed = true;
      return "";
    }
    this.token = "";
    const out = this.flushComma() + json;
    this.expect = "after";
    return out;
  }

  private close(): string {
    const frame = this.stack.pop()!;
    this.comma = false;
    this.expect = "after";
    if (this.stack.length === 0) this.done = true;
    return JSON_CLOSER[frame];
  }

  private flushComma(): string {
    if (!this.comma) return "";
    this.comma = false;
    return ", ";
  }

  private fail(): [string, boolean] {
    this.failed = true;
    return ["", false];
  }
}

/** A Python number or literal as JSON, or null when it is neither. */
function tokenJson(token: string): string | null {
  const literal = LITERALS[token];
  if (literal !== undefined) return literal;
  const m = NUMBER.exec(token.replace(/(?<=\d)_(?=\d)/g, ""));
  if (m === null) return null;
  const [, sign, int, frac, exp] = m;
  if (int === "" && (frac === undefined || frac === "")) return null;
  // JSON wants digits on both sides of the point and no leading zeros or plus signs: `.5`, `5.`, `+3`, `007`.
  let json = (sign === "-" ? "-" : "") + (int!.replace(/^0+(?=\d)/, "") || "0");
  if (frac !== undefined) json += "." + (frac || "0");
  if (exp !== undefined) json += "e" + exp;
  return json;
}

/** Decoded text as the inside of a JSON string (quotes, backslashes and control chars escaped; the rest kept). */
function jsonText(text: string): string {
  return text === "" ? "" : JSON.stringify(text).slice(1, -1);
}

/**
 * The escape at s[at] (a backslash), reading no further than `end`: its text and length; text undefined when it
 * is malformed; null when it needs chars past `end`.
 */
function decodeEscape(s: string, at: number, end: number): {text: string | undefined; length: number} | null {
  if (at + 1 >= end) return null;
  const c = s[at + 1]!;
  const simple = SIMPLE[c];
  if (simple !== undefined) return {text: simple, length: 2};
  if (c === "\r") {
    // A line continuation written with CRLF.
    if (at + 2 >= end) return null;
    return {text: "", length: s[at + 2] === "\n" ? 3 : 2};
  }
  const digits = HEX_DIGITS[c];
  if (digits !== undefined) {
    if (at + 2 + digits > end) {
      // Wait only while what is there could still be the escape's hex digits.
      return /^[0-9a-fA-F]*$/.test(s.slice(at + 2, end)) ? null : {text: undefined, length: 0};
    }
    const hex = s.slice(at + 2, at + 2 + digits);
    if (!/^[0-9a-fA-F]+$/.test(hex)) return {text: undefined, length: 0};
    const code = parseInt(hex, 16);
    if (code > 0x10ffff) return {text: undefined, length: 0};
    return {text: String.fromCodePoint(code), length: 2 + digits};
  }
  if (c >= "0" && c <= "7") {
    // Octal: up to three digits.
    let n = 1;
    while (n < 3 && at + 1 + n < end && /[0-7]/.test(s[at + 1 + n]!)) n++;
    if (n < 3 && at + 1 + n >= end) return null;
    return {text: String.fromCharCode(parseInt(s.slice(at + 1, at + 1 + n), 8)), length: 1 + n};
  }
  return {text: "\\" + c, length: 2};
}
