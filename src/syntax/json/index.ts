// The json shape: each call a JSON object holding the name and the arguments. Hermes `<tool_call>{...}</tool_call>`,
// Nemotron `<TOOLCALL>[...]</TOOLCALL>`, Llama 3's bare `{"name", "parameters"}`, Command R's lists, Apertus' objects
// keyed by the name, and the generic form `{"tool_calls": [...]}` taught to templates without a syntax.
// The streaming parser: region.ts; the arguments' grammar and boundary: ../json-arguments.ts.
//
// Whitespace: JSON whitespace goes wherever JSON allows it, and between the markers and the JSON (the syntax's `pad`,
// Hermes' "\n", is whitespace: the grammar's WS covers it).

import type {JsonCallSyntax} from "../../core/call-syntax.ts";
import {alt, cls, EMPTY, lit, rep, seq, type Expr} from "../../grammar/gbnf.ts";
import {WS, type ToolBuild} from "../../grammar/tool-build.ts";
import {XmlCallsRegion, xmlMarkers} from "../xml/region.ts";
import {anyJsonArguments, argsText, EXAMPLE_ARGS, jsonArgumentBoundary, strictJsonArguments} from "../json-arguments.ts";
import {badSyntax, esc, markerTexts, matchName} from "../literals.ts";
import {skipWs} from "../scan.ts";
import type {CallShape, Piece, WrittenCall} from "../shape.ts";
import {JsonCallsRegion, TaggedCallRegion} from "./region.ts";

const INDEX = rep(cls("[0-9]"), 1, 4);

/** A call object's opening up to the colon after its arguments key: `{ ["ID": "0",] "NAME": "get", "ARGS":`. */
function callOpening(b: ToolBuild, s: JsonCallSyntax, names: string[]): Expr {
  const name = b.rule("tool-name", alt(...names.map((n) => lit(`"${n}"`))));
  if (s.keyedByName) return seq(WS, lit("{"), WS, name, WS, lit(":"));
  const key = (k: string) => seq(lit(JSON.stringify(k)), WS, lit(":"), WS);
  // Command R numbers its calls; any run of digits is accepted (the grammar does not count the calls).
  const id = s.idKey === undefined ? EMPTY : seq(key(s.idKey), lit('"'), INDEX, lit('"'), WS, lit(","), WS);
  return seq(WS, lit("{"), WS, id, key(s.nameKey), name, WS, lit(","), WS, lit(JSON.stringify(s.argsKey)), WS, lit(":"));
}

/** The call object's own `}` after the arguments; a list's `]` and close belong to the after-call phase. */
const afterArguments = (s: JsonCallSyntax): Expr => seq(WS, lit("}"), !s.list && s.close !== "" ? seq(WS, lit(s.close)) : EMPTY);

interface Patterns {
  /** The names of the call's members are what the open phase is recognised by. */
  named: RegExp;
  /** What follows the arguments object's `}` until the call ends. */
  close: RegExp;
  /** After a call in a list: `]` and the close. */
  end: RegExp;
}

const patterns = new WeakMap<object, Patterns>();

function patternsOf(s: JsonCallSyntax): Patterns {
  let p = patterns.get(s);
  if (p === undefined) {
    p = {
      named: s.keyedByName ? /\{\s*("(?:[^"\\]|\\.)*")\s*:/
        : new RegExp(`"${esc(s.nameKey)}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")\\s*,\\s*"${esc(s.argsKey)}"\\s*:`),
      close: new RegExp(`^\\s*\\}${!s.list && s.close !== "" ? `\\s*${esc(s.close)}` : ""}`),
      end: new RegExp(`^\\s*\\]${s.close === "" ? "" : `\\s*${esc(s.close)}`}`),
    };
    patterns.set(s, p);
  }
  return p;
}

export const jsonShape: CallShape<JsonCallSyntax> = {
  check(s) {
    if (s.nameKey === "" || s.argsKey === "") badSyntax(s, "nameKey and argsKey must be set");
    if (s.opener === null && s.start === undefined) badSyntax(s, "a syntax without an opener needs `start`");
    if (s.opener === "") badSyntax(s, "the opener is empty (use null and `start`)");
  },
  openers: (s) => (s.opener === null ? [] : [s.opener]),
  start: (s) => (s.opener === null ? s.start! : null),
  hasAfterPhase: (s) => s.list,

  openGrammar(b, s, names, fromReplyStart) {
    const call = callOpening(b, s, names);
    const list = s.list ? seq(WS, lit("[")) : EMPTY;
    if (s.opener !== null) return seq(fromReplyStart ? seq(WS, lit(s.opener)) : EMPTY, list, call);
    // No opener: the calls start the reply (the generic form's envelope, or Llama 3's bare object). Not from
    // the reply's start means after a `,` in the list: another call object.
    if (!fromReplyStart) return call;
    const start = s.start!;
    if (!start.consumed) return seq(list, call);
    const envelope = seq(...start.pieces.map((piece) => seq(WS, lit(piece))));
    return seq(envelope, s.list && start.pieces[start.pieces.length - 1] !== "[" ? seq(WS, lit("[")) : EMPTY, call);
  },
  anyArguments: (_b, s) => anyJsonArguments(afterArguments(s)),
  firstMatters: false,
  strictArguments: (b, s, written) => strictJsonArguments(b, written, afterArguments(s)),
  jsonParameters: () => [],
  /** Lists: `,` and the next call's opening ("more"), or `]` and the close ("end"). */
  afterGrammar(b, s, more, names) {
    const end = seq(lit("]"), s.close !== "" ? seq(WS, lit(s.close)) : EMPTY);
    return seq(WS, more ? alt(seq(lit(","), callOpening(b, s, names)), end) : end);
  },
  boundary(s, phase, text) {
    const p = patternsOf(s);
    switch (phase.kind) {
      case "open": {
        const name = matchName(p.named, text);
        return name === null ? null : {kind: "named", name};
      }
      case "argument":
        return jsonArgumentBoundary(p.close, phase.strict, text);
      case "after": {
        const i = skipWs(text, 0);
        if (text[i] === "]") return p.end.test(text) ? {kind: "end"} : null;
        if (text[i] !== ",") return null;
        const name = matchName(p.named, text);
        return name === null ? null : {kind: "more", name};
      }
    }
  },

  parsing(s, tools) {
    const close = s.close.trim();
    if (s.opener === null) {
      const start = s.start ?? {pieces: ["{"], consumed: false};
      return {
        openers: [], strays: [], start,
        region: (_opener, calls) => new JsonCallsRegion(calls, {close, wholeReply: start.consumed, inList: start.consumed && s.list}),
      };
    }
    const opener = s.opener.trim();
    const other = s.alsoReads ? xmlMarkers(s.alsoReads) : null;
    // A close that is ordinary markdown (Command R+'s ```) is not dropped from text outside a call: code fences are.
    const stray = close !== "" && !/^`+$/.test(close);
    return {
      openers: [opener], strays: stray ? [close] : [], start: null,
      region: (_o, calls) => {
        const json = () => new JsonCallsRegion(calls, {close, wholeReply: false, inList: false, keyedByName: s.keyedByName === true});
        if (other === null || other.open[0] !== opener) return json();
        return new TaggedCallRegion(json, () => new XmlCallsRegion(calls, tools, other, opener));
      },
    };
  },

  writeCalls(s, calls) {
    const lit = (syntax: string): Piece => ({syntax});
    const val = (client: string): Piece => ({client});
    const object = (c: WrittenCall, i: number): Piece[] => s.keyedByName
      ? [lit("{"), val(JSON.stringify(c.name)), lit(": "), val(argsText(c.args)), lit("}")]
      : [
        lit(`{${s.idKey ? `"${s.idKey}": "${i}", ` : ""}"${s.nameKey}": `), val(JSON.stringify(c.name)),
        lit(`, "${s.argsKey}": `), val(argsText(c.args)), lit("}"),
      ];
    const joined = (sep: string) => calls.flatMap((c, i) => [...(i > 0 ? [lit(sep)] : []), ...object(c, i)]);
    if (s.opener === null) {
      // Calls that start the reply: an envelope (the generic form's {"tool_calls": [...]}) or one bare object.
      if (!s.start!.consumed) return object(calls[0]!, 0);
      return [lit(s.start!.pieces.map((p) => (p === ":" ? ": " : p)).join("")), ...joined(", "), lit(`]${s.close}`)];
    }
    if (s.list) return [lit(`${s.opener}${s.pad}[`), ...joined(", "), lit(`]${s.pad}${s.close}`)];
    return calls.flatMap((c, i) => [...(i > 0 ? [lit("\n")] : []), lit(s.opener! + s.pad), ...object(c, i), lit(s.pad + s.close)]);
  },

  markers: (s) => markerTexts([s.opener, s.close]),
  missingEdge: () => null,
  example(s) {
    const id = s.idKey ? `"${s.idKey}": "0", ` : "";
    const obj = s.keyedByName ? `{"get_weather": ${EXAMPLE_ARGS}}` : `{${id}"${s.nameKey}": "get_weather", "${s.argsKey}": ${EXAMPLE_ARGS}}`;
    if (s.opener === null) return s.start?.consumed ? `{"tool_calls": [${obj}]}` : obj;
    return `${s.opener}${s.pad}${s.list ? `[${obj}]` : obj}${s.pad}${s.close}`;
  },
};
