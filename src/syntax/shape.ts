// One tool-call shape (src/core/call-syntax.ts names them: json, named, xml, and the custom harmony and gemma4) is
// everything svc does with a call written that way, behind this one interface: the phase grammars that enforce a call,
// the boundaries between those phases, the streaming parser that reads calls out of a reply, the writer that puts
// earlier calls back into a prompt, and what the docs and /health show of it. Each shape lives in its own folder
// (src/syntax/<shape>/index.ts); registry.ts maps a syntax to its shape, and is the only place that looks at
// `syntax.shape`. A family file names a shape and fills in its markers: families stay data.
//
// The phase protocol the grammar and boundary members follow is described in phases.ts.

import type {CallSyntax} from "../core/call-syntax.ts";
import type {Expr} from "../grammar/gbnf.ts";
import type {Notation} from "../grammar/generate.ts";
import type {Settings, ToolBuild} from "../grammar/tool-build.ts";
import type {CallEmitter, CallRegion} from "./reply/sink.ts";
import type {ReplyReader, ReplyToolSpec} from "./reply/parts.ts";

/** Which phase a grammar is for; each PhaseGrammar carries its own, to hand back to phaseBoundary. */
export type Phase =
  | {kind: "open"; fromReplyStart: boolean} // openGrammar: up to and including the tool name's end
  /** argumentGrammar: one parameter, or the close of the call. `first`: no parameter written yet; `json`
   * (xml): the parameters whose values are JSON rather than raw text. */
  | {kind: "argument"; strict: boolean; first: boolean; json: readonly string[]}
  | {kind: "after"}; // afterCallGrammar: the next call's opening, or the end of the calls

export type ArgumentPhase = Extract<Phase, {kind: "argument"}>;

/** A tool as the phase grammars see it. `strict` means enforced: pass false for a strict tool that
 * strictEligibility refused, and it is served as a non-strict one. */
export interface ToolSpec {
  name: string;
  /** The function's parameter schema (JSON Schema); ignored for a non-strict tool. */
  parameters: unknown;
  strict: boolean;
}

export type Boundary =
  | {kind: "named"; name: string} // an open phase named the tool
  | {kind: "parameter"; name: string} // one parameter written; more follow
  | {kind: "closed"; name?: string} // the call ended; name: the parameter written in the same phase, if any (JSON-argument shapes)
  | {kind: "more"; name: string} // after a call: another call opened, naming its tool
  | {kind: "end"} // after a call: the calls' list or section was closed
  /** Recipient messages: an open phase found the content's recipient (no call), or a call's block ended with its
   * message (more messages may follow); either way no call is open and free text follows. */
  | {kind: "text"};

/** JSON text that starts the calls where the content starts (a json syntax without an opener). `consumed`: the
 * pieces are an envelope around the calls; otherwise they are the start of the first call object itself. */
export interface CallStart {
  pieces: readonly string[];
  consumed: boolean;
}

/** What the reply parser needs of a shape to find calls in content (src/pipeline/reply/parser.ts). */
export interface CallParsing {
  /** Markers that open a call region anywhere in content. */
  openers: readonly string[];
  /** Close markers dropped when they appear in content (a stray close is still syntax). */
  strays: readonly string[];
  /** For calls that can only start the content: matches the start, incrementally (see matchStart). */
  start: CallStart | null;
  /** The region after `opener` (null: started by `start`). */
  region(opener: string | null, calls: CallEmitter): CallRegion;
}

/** A piece of a call written into a prompt: the syntax's own text, or text that came from the client. */
export type Piece = {syntax: string} | {client: string};

/** A call to write back into a prompt: its name and its arguments' text. */
export interface WrittenCall {
  name: string;
  args: string;
}

export interface CallShape<S extends CallSyntax = CallSyntax> {
  /** The syntax data is code, not input: a malformed one is a programming error (TypeError). */
  check(s: S): void;
  /** The texts that open a call in free text (the steering binds the open phase right after one). */
  openers(s: S): string[];
  /** Where calls can only start the content: the JSON text that starts them; null otherwise. */
  start(s: S): CallStart | null;
  /** Whether calls are followed by an after-call phase (a list's `,`/`]`, a section, calls nothing closes). */
  hasAfterPhase(s: S): boolean;

  /** Values in a notation other than JSON (Gemma 4's), made once a ToolBuild exists. */
  notation?: (b: ToolBuild) => Notation;
  /** The open phase: from the reply's start, or right after an opener the model wrote freely. */
  openGrammar(b: ToolBuild, s: S, names: string[], fromReplyStart: boolean): Expr;
  /** A non-strict tool's arguments: any arguments, then the close (xml: one parameter per phase). */
  anyArguments(b: ToolBuild, s: S, first: boolean): Expr;
  /** Whether a non-strict argument phase differs by being the first (xml: its lead); false: one phase in all. */
  firstMatters: boolean;
  /** One parameter not in `written`, or the close once every required one is written. */
  strictArguments(b: ToolBuild, s: S, written: string[]): Expr;
  /** The parameters whose values the boundary must scan as JSON (xml's non-string ones); [] for the others. */
  jsonParameters(parameters: unknown, settings: Settings): string[];
  /** After a call closed (only where hasAfterPhase): another call up to its name's end, or the end of the calls. */
  afterGrammar(b: ToolBuild, s: S, more: boolean, names: string[]): Expr;
  /** Where the phase ends in `text` (everything generated under its grammar), or null while it has not. */
  boundary(s: S, phase: Phase, text: string): Boundary | null;

  /** Finds calls in a reply's content; null for a shape whose reader reads the whole reply (harmony). */
  parsing(s: S, tools: readonly ReplyToolSpec[]): CallParsing | null;
  /** A shape whose replies are messages (harmony's channels, recipients) reads the whole reply itself, reasoning and
   * content too. `calls`: the request offers tools (without, a call message is dropped). */
  reader?: (s: S, opts: {calls: boolean; tools: readonly ReplyToolSpec[]}) => ReplyReader;

  /** Calls as the shape writes them (the layout its grammar writes), or null where the template writes them itself. */
  writeCalls(s: S, calls: readonly WrittenCall[]): Piece[] | null;
  /** The marker texts a syntax writes (kept visible when they are special tokens, so the parser sees them). */
  markers(s: S): string[];
  /** What a syntax read from a template lacks for the parsers to find its calls' edges, or null. */
  missingEdge(s: S): string | null;
  /** One call, get_weather({"city": "Paris"}), as the syntax writes it (docs/families.md). */
  example(s: S): string;
}
