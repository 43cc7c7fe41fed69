// Tool-call syntaxes: one module per call shape (src/syntax/<shape>/), behind one interface (shape.ts), chosen by the
// registry. What the rest of svc uses: the phase grammars that enforce a strict call and their boundaries, the call
// parsing the reply parser drives, and the writer of earlier calls.

export {
  afterCallGrammar, argumentGrammar, isToolName, MAX_STRICT_PARAMETERS, openGrammar, phaseBoundary, strictEligibility, xmlRawParameters,
  type Eligibility, type PhaseGrammar,
} from "./phases.ts";
export {callOpeners, checkSyntax, hasAfterPhase, shapeOf, unusableSyntax} from "./registry.ts";
export type {Boundary, CallParsing, CallShape, CallStart, Phase, Piece, ToolSpec, WrittenCall} from "./shape.ts";
export type {CallSyntax} from "../core/call-syntax.ts";
export type {ReplyMode, ReplyPart, ReplyReader, ReplyToolSpec} from "./reply/parts.ts";
export {CallEmitter, PartSink, findMarker, partialMarkerLength, isJsonWs, type CallRegion} from "./reply/sink.ts";
