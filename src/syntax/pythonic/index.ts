// The pythonic shape: calls as Python function calls in one list, arguments as keywords. LFM2 / LFM2.5:
//   <|tool_call_start|>[get_weather(city="Paris", days=2), get_time(tz="Europe/Paris")]<|tool_call_end|>
// Grammar: grammar.ts (values written as JSON); boundaries: boundary.ts; the streaming parser, which reads Python
// literals as well (single quotes, True, None, tuples) and turns them into JSON: region.ts.

import type {PythonicCallSyntax} from "../../core/call-syntax.ts";
import {parseArgs} from "../json-arguments.ts";
import {badSyntax, markerTexts} from "../literals.ts";
import type {CallShape, Piece, WrittenCall} from "../shape.ts";
import {pythonicBoundary} from "./boundary.ts";
import {pythonicAfter, pythonicAnyArguments, pythonicOpen, pythonicStrictArguments} from "./grammar.ts";
import {PythonicCallsRegion} from "./region.ts";

export const pythonicShape: CallShape<PythonicCallSyntax> = {
  check(s) {
    if (s.open.trim() === "" || s.close.trim() === "") badSyntax(s, "open and close must be set (they are what the parser finds the calls by)");
  },
  openers: (s) => [s.open],
  start: () => null,
  hasAfterPhase: () => true,

  openGrammar: pythonicOpen,
  anyArguments: (b) => pythonicAnyArguments(b),
  firstMatters: false,
  strictArguments: (b, _s, written) => pythonicStrictArguments(b, written),
  jsonParameters: () => [],
  afterGrammar: pythonicAfter,
  boundary: pythonicBoundary,

  parsing: (s) => ({
    openers: [s.open.trim()],
    strays: [s.close.trim()],
    start: null,
    region: (_opener, calls) => new PythonicCallsRegion(calls, s.close.trim()),
  }),

  writeCalls(s, calls) {
    const lit = (syntax: string): Piece => ({syntax});
    const val = (client: string): Piece => ({client});
    // Keyword arguments with JSON values: what the grammar writes, and a Python literal too.
    const one = (c: WrittenCall): Piece[] => [
      val(c.name), lit("("),
      ...Object.entries(parseArgs(c.args) ?? {}).flatMap(([k, v], i) => [...(i > 0 ? [lit(", ")] : []), val(k), lit("="), val(JSON.stringify(v))]),
      lit(")"),
    ];
    return [lit(`${s.open}[`), ...calls.flatMap((c, i) => [...(i > 0 ? [lit(", ")] : []), ...one(c)]), lit(`]${s.close}`)];
  },

  markers: (s) => markerTexts([s.open, s.close]),
  missingEdge: () => null,
  example: (s) => `${s.open}[get_weather(city="Paris")]${s.close}`,
};
