// Qwen3-Coder / Qwen3.5 calls:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// The arguments JSON is built as parameters arrive. String-typed values stream (escaped per chunk, so an
// escape is never split); other values are buffered to </parameter> and typed then. Exactly one newline
// after <parameter=KEY> and one before </parameter> belong to the layout, not to the value.
//
// Tolerated: missing newlines; a bare <function=…> without the <tool_call> wrapper; a missing
// </function> when </tool_call> closes the call. A value ends only at </parameter> (the value itself
// may contain "</function>" when the model writes code), so a missing </parameter> runs to the end.
// Malformed syntax is dropped, never shown: junk between tags is skipped; a malformed function name
// drops the whole call up to </tool_call> (nothing was announced yet), or, for a bare <function=,
// just that tag.

import {type CallEmitter, type CallRegion, findMarker, partialMarkerLength} from "./sink.ts";
import type {ToolSpec} from "./types.ts";

export const XML_FUNCTION_OPEN = "<function=";
const CALL_CLOSE = "</tool_call>";
const FUNCTION_CLOSE = "</function>";
const PARAM_OPEN = "<parameter=";
const PARAM_CLOSE = "</parameter>";

/** How a parameter's text becomes JSON: a string as is, parsed JSON, or parsed only if it looks like JSON. */
export type ValueKind = "string" | "json" | "auto";

type State = "expectFunction" | "fname" | "body" | "pname" | "pvalue" | "afterFunction" | "junk";

/** Step result: chars consumed, or STUCK when the state needs more text to decide. */
const STUCK = -1;

export class XmlCallRegion implements CallRegion {
  ended = false;
  private state: State;
  private index: number | null = null;
  private tool: ToolSpec | undefined;
  private params = 0;
  private kind: ValueKind = "auto";
  private paramName = "";
  private leadDone = false;
  private valueText = "";
  /** Opened by a bare <function=…>, with no <tool_call> wrapper to close. */
  private readonly bare: boolean;

  constructor(
    private readonly calls: CallEmitter,
    private readonly tools: readonly ToolSpec[],
    opener: string,
  ) {
    this.bare = opener === XML_FUNCTION_OPEN;
    this.state = this.bare ? "fname" : "expectFunction";
  }

  feed(text: string, final: boolean): number {
    let pos = 0;
    while (!this.ended) {
      const n = this.step(pos === 0 ? text : text.slice(pos), final);
      if (n === STUCK) break;
      pos += n;
    }
    return pos;
  }

  finish(): void {
    this.closeCall(false);
    this.ended = true;
  }

  /** Returns chars consumed (0 only with a state change) or STUCK. */
  private step(s: string, final: boolean): number {
    switch (this.state) {
      case "expectFunction":
      case "junk": {
        // expectFunction skips whitespace (and junk) to <function=; junk skips to </tool_call>.
        const markers = this.state === "junk" ? [CALL_CLOSE] : [XML_FUNCTION_OPEN, CALL_CLOSE];
        const m = findMarker(s, markers);
        if (m) {
          if (m.marker === XML_FUNCTION_OPEN) this.state = "fname";
          else this.ended = true;
          return m.at + m.marker.length;
        }
        return dropAllBut(s, final ? 0 : partialMarkerLength(s, markers));
      }
      case "fname":
      case "pname": {
        const at = s.search(/[>\n<]/);
        if (at < 0 && !final) return STUCK;
        const name = at >= 0 && s[at] === ">" ? s.slice(0, at).trim() : "";
        if (this.state === "fname") {
          if (name === "") {
            // Not a call after all. Without a wrapper there is no close tag to skip to: the text
            // after "<function=" is content again (the tag itself stays dropped).
            if (this.bare) {
              this.ended = true;
              return 0;
            }
            return this.to("junk", at < 0 ? s.length : at);
          }
          this.index = this.calls.start(name);
          this.tool = this.tools.find((t) => t.name === name);
          this.calls.args(this.index, "{");
          return this.to("body", at + 1);
        }
        if (name === "") return this.to("body", at < 0 ? s.length : at); // malformed parameter: skipped
        this.beginValue(name);
        return this.to("pvalue", at + 1);
      }
      case "body": {
        const markers = [PARAM_OPEN, FUNCTION_CLOSE, CALL_CLOSE];
        const m = findMarker(s, markers);
        if (!m) return dropAllBut(s, final ? 0 : partialMarkerLength(s, markers));
        if (m.marker === PARAM_OPEN) this.state = "pname";
        else {
          this.closeCall(true);
          if (m.marker === CALL_CLOSE) this.ended = true;
          else this.state = "afterFunction";
        }
        return m.at + m.marker.length;
      }
      case "pvalue":
        return this.valueStep(s, final);
      case "afterFunction": {
        // The call is over; an optional </tool_call> (after whitespace) still belongs to its syntax.
        const t = s.trimStart();
        const ws = s.length - t.length;
        if (t.startsWith(CALL_CLOSE)) {
          this.ended = true;
          return ws + CALL_CLOSE.length;
        }
        if (!final && CALL_CLOSE.startsWith(t)) return STUCK;
        // No wrapper close: the whitespace is left to the content, which decides what it is.
        this.ended = true;
        return 0;
      }
    }
  }

  private to(state: State, consumed: number): number {
    this.state = state;
    return consumed;
  }

  private valueStep(s: string, final: boolean): number {
    if (!this.leadDone) {
      if (s === "" && !final) return STUCK;
      this.leadDone = true;
      return s.startsWith("\n") ? 1 : 0;
    }
    const at = s.indexOf(PARAM_CLOSE);
    if (at >= 0) {
      this.valueChunk(s.slice(0, at - trailingNewline(s, at)));
      this.endValue();
      return this.to("body", at + PARAM_CLOSE.length);
    }
    // Held: a possible start of </parameter>, and the newline before it (it may be the layout newline).
    let keep = partialMarkerLength(s, [PARAM_CLOSE]);
    keep += trailingNewline(s, s.length - keep);
    if (final) {
      // Cut inside the value: the partial close tag and the layout newline are dropped; finish() closes it.
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

  private beginValue(name: string): void {
    this.paramName = name;
    this.kind = valueKind(this.tool, name);
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
    if (this.state === "pvalue") this.endValue();
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

function trailingNewline(s: string, end: number): number {
  return end > 0 && s[end - 1] === "\n" ? 1 : 0;
}

/** The schema of one parameter decides how its text is typed; see ValueKind. */
export function valueKind(tool: ToolSpec | undefined, param: string): ValueKind {
  const params = tool?.parameters;
  const props = isObject(params) ? params.properties : undefined;
  const schema = isObject(props) && Object.hasOwn(props, param) ? props[param] : undefined;
  return isObject(schema) ? schemaKind(schema) : "auto";
}

function schemaKind(schema: Record<string, unknown>): ValueKind {
  const {type, anyOf, oneOf} = schema;
  const values = schema.enum;
  if (Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === "string")) return "string";
  if (typeof schema.const === "string") return "string";
  if (typeof type === "string") return type === "string" ? "string" : "json";
  if (Array.isArray(type) && type.length > 0) return type.every((t) => t === "string") ? "string" : "json";
  const alternatives = anyOf ?? oneOf;
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    const kinds = alternatives.map((a) => (isObject(a) ? schemaKind(a) : "auto"));
    if (kinds.every((k) => k === "string")) return "string";
    if (kinds.every((k) => k !== "auto")) return "json";
  }
  return "auto";
}

/** The JSON text of a buffered value. A declared non-string type that does not parse falls back to a string. */
export function typedValue(kind: ValueKind, text: string): string {
  if (kind === "string") return JSON.stringify(text);
  const t = text.trim();
  // Python-style literals are common in these models' output when the schema asks for JSON ones.
  const literal = kind === "json" ? PYTHON_LITERALS[t] : undefined;
  if (literal !== undefined) return literal;
  try {
    const parsed: unknown = JSON.parse(t);
    if (kind === "json" || typeof parsed !== "string") return JSON.stringify(parsed);
  } catch {
    // not JSON: a string
  }
  return JSON.stringify(text);
}

const PYTHON_LITERALS: Record<string, string> = {True: "true", False: "false", None: "null"};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
