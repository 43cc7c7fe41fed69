// Gemma 4's calls: `<|tool_call>call:NAME{city:<|"|>Paris<|"|>,days:2}<tool_call|>`, the arguments in Gemma's own
// notation (grammar.ts says which), turned into JSON as they stream (region.ts). The template writes earlier calls
// itself.

import type {CustomCallSyntax} from "../../core/call-syntax.ts";
import type {CallShape} from "../shape.ts";
import {gemmaBoundary} from "./boundary.ts";
import {gemmaAnyArguments, gemmaNotation, gemmaOpen, gemmaStrictArguments} from "./grammar.ts";
import {GEMMA} from "./markers.ts";
import {Gemma4CallRegion} from "./region.ts";

export const gemma4Shape: CallShape<CustomCallSyntax> = {
  // The registry picked this shape by the kind; there is no other data to check.
  check: () => undefined,
  openers: () => [GEMMA.opener],
  start: () => null,
  hasAfterPhase: () => false,

  notation: gemmaNotation,
  openGrammar: (b, _s, names, fromReplyStart) => gemmaOpen(b, names, fromReplyStart),
  anyArguments: (b) => gemmaAnyArguments(b),
  firstMatters: false,
  strictArguments: (b, _s, written) => gemmaStrictArguments(b, written),
  jsonParameters: () => [],
  afterGrammar: () => {
    throw new TypeError("Gemma 4 calls have no after-call phase");
  },
  boundary: (_s, phase, text) => gemmaBoundary(phase, text),

  parsing: () => ({openers: [GEMMA.opener], strays: [GEMMA.close], start: null, region: (_opener, calls) => new Gemma4CallRegion(calls)}),

  writeCalls: () => null,
  markers: () => [GEMMA.opener, GEMMA.close],
  missingEdge: () => null,
  example: () => `${GEMMA.opener}${GEMMA.prefix}get_weather{city:${GEMMA.quote}Paris${GEMMA.quote}}${GEMMA.close}`,
};
