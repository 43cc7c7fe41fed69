// gpt-oss (OpenAI's harmony format): a reply is messages in channels, and a call is a commentary message addressed
// to=functions.NAME whose body is the arguments as JSON. Its reader (reader.ts) reads the whole reply, reasoning and
// content too; the template writes earlier calls itself.

import type {CustomCallSyntax} from "../../core/call-syntax.ts";
import {alt, EMPTY, lit, seq} from "../../grammar/gbnf.ts";
import {anyJsonArguments, EXAMPLE_ARGS, jsonArgumentBoundary, strictJsonArguments} from "../json-arguments.ts";
import {esc, matchName, NAME, optional, optLit, whole} from "../literals.ts";
import type {CallShape} from "../shape.ts";
import {HARMONY} from "./markers.ts";
import {HarmonyParser} from "./reader.ts";

const CALL = esc(HARMONY.prefix) + NAME + esc(HARMONY.nameEnd);
const OPEN_FROM_START = whole(`${optional(HARMONY.start)}${esc(HARMONY.opener)}${CALL}`);
const OPEN = whole(CALL);
/** <|call|> ends the generation: a call is complete at its arguments' `}`. */
const CLOSE = /^/;

export const harmonyShape: CallShape<CustomCallSyntax> = {
  // The registry picked this shape by the kind; there is no other data to check.
  check: () => undefined,
  openers: () => [HARMONY.opener],
  start: () => null,
  hasAfterPhase: () => false,

  openGrammar(b, _s, names, fromReplyStart) {
    const named = seq(lit(HARMONY.prefix), b.rule("tool-name", alt(...names.map(lit))), lit(HARMONY.nameEnd));
    // From the reply's start: the first message has no <|start|>; after a reasoning message it has.
    return fromReplyStart ? seq(optLit(HARMONY.start), lit(HARMONY.opener), named) : named;
  },
  anyArguments: () => anyJsonArguments(EMPTY),
  firstMatters: false,
  strictArguments: (b, _s, written) => strictJsonArguments(b, written, EMPTY),
  jsonParameters: () => [],
  afterGrammar: () => {
    throw new TypeError("harmony calls have no after-call phase");
  },
  boundary(_s, phase, text) {
    switch (phase.kind) {
      case "open": {
        const name = matchName(phase.fromReplyStart ? OPEN_FROM_START : OPEN, text);
        return name === null ? null : {kind: "named", name};
      }
      case "argument":
        return jsonArgumentBoundary(CLOSE, phase.strict, text);
      case "after":
        throw new TypeError("harmony calls have no after-call phase");
    }
  },

  parsing: () => null,
  reader: (_s, opts) => new HarmonyParser({calls: opts.calls}),

  writeCalls: () => null,
  markers: () => [],
  missingEdge: () => null,
  example: () => `${HARMONY.opener}${HARMONY.prefix}get_weather${HARMONY.nameEnd}${EXAMPLE_ARGS}`,
};
