// Grammars for strict tool calls, one phase at a time. The pipeline enforces a call by switching grammars
// at boundaries: it binds a phase grammar, watches the text (phaseBoundary), and at the boundary binds
// the next phase's grammar from the next token. So every phase grammar ENDS EXACTLY at its boundary:
// once it is complete nothing more may follow, and no token can run past it. Arguments are one
// parameter per phase because a strict tool's parameters may come in any order: the pipeline passes the
// set already written, which is how "every required parameter" and "no duplicate" hold across phases.
//
// A syntax is a family's CallSyntax (src/core/call-syntax.ts), data; each shape (src/syntax/<shape>/) builds its
// phases, and says where each ends (phaseBoundary). The phases by shape (WS is the bounded `ws` rule; [..] only from
// the reply's start; "lead": an optional layout newline, see literals.ts):
//   openGrammar      json   [WS OPENER] [WS "["] CALL          CALL = WS "{" WS ["ID": "0",] "NAME": "get", "ARGS":
//                           opener null: [WS "{" WS "\"tool_calls\"" WS ":" WS "["] CALL (the `start` pieces;
//                           Llama 3's are the call's own start: CALL alone)                    ends after ":"
//                    named  [WS SECTION.OPEN OPEN] PREFIX NAME [":" INDEX] NAMEEND                ends after NAMEEND
//                    xml    [WS SECTION.OPEN OPEN] NAME NAMEEND (its tail newline is a lead)    ends after NAMEEND
//                           (GLM 4.7 has no NAMEEND: the phase ends with the `<` that starts what follows)
//                    harmony [[<|start|>assistant] <|channel|>commentary to=] functions.NAME <|constrain|>json<|message|>
//                    gemma4 [WS <|tool_call>] call:NAME{
//                    Not from the reply's start, the phase continues right after the opener the model wrote freely.
//   argumentGrammar  JSON arguments (json, named, harmony): WS ["{" WS] ( "P" WS ":" WS VALUE WS ( "," | CLOSE ) | CLOSE )
//                           CLOSE = "}" then json: WS "}" [WS CLOSEMARKER] (lists: the after phase closes them);
//                           named: ARGSEND CLOSE; harmony: nothing (<|call|> ends the generation)
//                    xml    lead ( KEYOPEN P KEYEND VALUE VALUEEND | CLOSE )    ends after VALUEEND / CLOSE
//                    gemma4 ( P ":" VALUE ( "," | "}<tool_call|>" ) | "}<tool_call|>" )  (gemma4/grammar.ts)
//   afterCallGrammar json lists: WS ( "," CALL | "]" [WS CLOSEMARKER] ); sections: lead ( SEPARATOR OPEN NAME... |
//                    SECTION.CLOSE ); Mistral (no close, no section): ( OPEN NAME NAMEEND )? — empty: the reply ends
// Layout: literals are written exactly as the syntax data has them, with these exceptions, all kept from the
// three syntaxes these grammars started with: WS wherever JSON allows whitespace and between a json syntax's
// markers and its JSON (its `pad`); a reply may start with WS; a layout newline at the start of a phase (a
// "lead") may be left out; in the xml shape the newlines between the close's tags may be left out.
// `,` is offered only while some parameter is left to write, CLOSE only once every required one is written
// (the empty `{}` only in the first phase): no phase can lead to a dead end, and a trailing comma is never
// possible.
//
// Strict tools (the spec): enforced keywords as in structured output, every required parameter, no
// undeclared one (an absent top-level additionalProperties counts as false); `pattern` and `format` are
// accepted and not enforced; anything else unenforceable makes the tool ineligible (strictEligibility),
// and the pipeline then serves it as a non-strict tool: name constrained, arguments any JSON object (any
// Gemma object), or any parameters with raw text values (xml; a name already written cannot be excluded
// there: GBNF has no "any name but these" short of spelling every name out, see keys.ts).

import type {CallSyntax} from "../core/call-syntax.ts";
import {compileSchema, schemaKey, type CompileOptions} from "../grammar/compile.ts";
import {SchemaError, seg} from "../grammar/errors.ts";
import {ToolBuild, toolSettings, type Settings} from "../grammar/tool-build.ts";
import {shapeOf} from "./registry.ts";
import type {Boundary, Phase, ToolSpec} from "./shape.ts";

export interface PhaseGrammar {
  gbnf: string;
  /** sha256 hex of the inputs that decide the grammar (syntax, phase, names, schema, written set, budgets). */
  key: string;
  /** Hand this back to phaseBoundary with the text generated under this grammar. */
  phase: Phase;
}

export type Eligibility = {enforce: true} | {enforce: false; reason: string};

/** More top-level parameters than this and a strict tool is served without enforcement. */
export const MAX_STRICT_PARAMETERS = 32;

/** Tool names as OpenAI allows them; written verbatim inside JSON strings and markup, never escaped. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function isToolName(name: unknown): name is string {
  return typeof name === "string" && TOOL_NAME.test(name);
}

/** A small LRU of finished phase grammars: a request with tools asks for the same phases again at every
 * call and every parameter, and so do the next requests with the same tools. Failures are not kept. */
class Lru {
  private readonly entries = new Map<string, PhaseGrammar>();
  constructor(private readonly capacity: number) {}
  get(key: string): PhaseGrammar | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }
  set(key: string, value: PhaseGrammar): void {
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}

const CACHE = new Lru(256);

/** The key holds the syntax's data itself: two families with the same data share grammars, and a family
 * whose data changes gets new ones. */
function cached(syntax: CallSyntax, inputs: Record<string, unknown>, s: Settings, phase: Phase | (() => Phase), build: () => string): PhaseGrammar {
  const key = schemaKey({grammar: "tool-call", syntax, ...inputs}, s);
  const hit = CACHE.get(key);
  if (hit !== undefined) return hit;
  const gbnf = build();
  const out: PhaseGrammar = Object.freeze({gbnf, key, phase: Object.freeze(typeof phase === "function" ? phase() : phase)});
  CACHE.set(key, out);
  return out;
}

/** The phases that hold no request schema (open, after-call, non-strict arguments) are the server's own grammars:
 * never timed out (compile.ts UNTIMED says why). Their size is bounded by the tools' names and the syntax. */
function untimed(s: Settings): Settings {
  return {...s, maxMs: Number.POSITIVE_INFINITY};
}

/** The names, checked, without repeats, sorted (so one set of tools is one grammar and one key). */
function toolNames(names: readonly string[]): string[] {
  if (!Array.isArray(names) || names.length === 0) throw new TypeError("a tool call needs at least one tool name");
  for (const n of names) if (!isToolName(n)) throw new TypeError(`tool name ${JSON.stringify(n)}: a tool name is 1 to 64 of a-z A-Z 0-9 _ -`);
  return [...new Set(names)].sort();
}

/** A ToolBuild in the syntax's value notation (Gemma's own, or JSON). */
function builder(syntax: CallSyntax, parameters: unknown, s: Settings): ToolBuild {
  return new ToolBuild(parameters, s, shapeOf(syntax).notation);
}

/** From the current position up to and including the tool name's end (see the header for each shape).
 * fromReplyStart false: the model already wrote one of the syntax's openers (callOpeners) freely; for a
 * json syntax without an opener it is the opening of another call object after a `,`. */
export function openGrammar(syntax: CallSyntax, names: readonly string[], opts: {fromReplyStart: boolean}, compile?: CompileOptions): PhaseGrammar {
  const list = toolNames(names);
  const from = opts.fromReplyStart === true;
  const s = untimed(toolSettings(compile));
  return cached(syntax, {phase: "open", names: list, fromReplyStart: from}, s, {kind: "open", fromReplyStart: from}, () => {
    const b = builder(syntax, null, s);
    return b.finish(shapeOf(syntax).openGrammar(b, syntax, list, from));
  });
}

/**
 * The next parameter not in `written`, or the end of the call (only once every required parameter is
 * written). JSON arguments: `written` empty means the `{` is not written yet. A non-strict tool's
 * arguments are one phase for JSON and Gemma arguments (any object, then the close), and one parameter with
 * any name and raw text per phase in the xml shape. Throws SchemaError for a strict tool whose schema is
 * not enforceable (check strictEligibility first), TypeError for a `written` name not declared.
 */
export function argumentGrammar(syntax: CallSyntax, tool: ToolSpec, written: readonly string[], compile?: CompileOptions): PhaseGrammar {
  const s = toolSettings(compile);
  const done = [...new Set(written)].sort();
  const first = done.length === 0;
  const shape = shapeOf(syntax);
  if (!tool.strict) {
    // Non-strict phases differ by `first` only where the shape says so (xml: its lead); elsewhere they are one phase.
    const phase: Phase = {kind: "argument", strict: false, first: shape.firstMatters ? first : true, json: []};
    const any = untimed(s);
    return cached(syntax, {phase: "argument", strict: false, first: shape.firstMatters && first}, any, phase, () => {
      const b = builder(syntax, null, any);
      return b.finish(shape.anyArguments(b, syntax, phase.first));
    });
  }
  const problem = structuralProblem(tool.parameters);
  if (problem !== null) throw new SchemaError(problem.reason, problem.path);
  const inputs = {phase: "argument", strict: true, parameters: tool.parameters, written: done};
  const build = () => {
    const b = builder(syntax, tool.parameters, s);
    for (const w of done) b.prop(w);
    return b.finish(shape.strictArguments(b, syntax, done));
  };
  // Which values are JSON (xml): the boundary scans those as JSON (they may hold the value-end tag in a string).
  const phase = (): Phase => ({kind: "argument", strict: true, first, json: shape.jsonParameters(tool.parameters, s)});
  return cached(syntax, inputs, s, phase, build);
}

/**
 * After a call closed, for the syntaxes that have this phase (hasAfterPhase: JSON lists, sections, calls
 * nothing closes). `more`: another call may follow ({kind: "more", name}, up to where an open phase would
 * end); always: the end of the calls ({kind: "end"}; Mistral: the end of the reply, an empty text).
 */
export function afterCallGrammar(syntax: CallSyntax, opts: {more: boolean; names: readonly string[]}, compile?: CompileOptions): PhaseGrammar {
  const shape = shapeOf(syntax);
  if (!shape.hasAfterPhase(syntax)) throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} has no after-call phase: what follows a call is free text`);
  const more = opts.more === true;
  const list = more ? toolNames(opts.names) : [];
  const s = untimed(toolSettings(compile));
  return cached(syntax, {phase: "after", more, names: list}, s, {kind: "after"}, () => {
    const b = builder(syntax, null, s);
    return b.finish(shape.afterGrammar(b, syntax, more, list));
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** What makes a parameters schema unfit for one-parameter-per-phase enforcement before compiling it. */
function structuralProblem(parameters: unknown): {reason: string; path: string} | null {
  const notObject = (why: string) => ({
    reason: `the parameters schema is not an object schema (${why}); a strict tool's parameters must be {"type": "object", "properties": {...}}`,
    path: ""});
  if (!isObject(parameters)) return notObject(parameters === null ? "null" : Array.isArray(parameters) ? "an array" : typeof parameters);
  const type = parameters.type;
  if (type !== undefined && !(type === "object" || (Array.isArray(type) && type.includes("object")))) return notObject(`type ${JSON.stringify(type)}`);
  if (type === undefined && !Object.hasOwn(parameters, "properties")) return notObject("no type and no properties");
  // The arguments are written one parameter per phase, so the top level must be one list of properties.
  for (const kw of ["anyOf", "oneOf", "$ref", "enum", "const"]) {
    if (Object.hasOwn(parameters, kw)) {
      return {reason: `parameters/${kw}: the top level of a strict tool's parameters must be one object schema, not ${kw}`, path: seg(kw)};
    }
  }
  const extra = parameters.additionalProperties;
  if (extra !== undefined && extra !== false) {
    return {reason: "parameters/additionalProperties: the tool allows parameters it does not declare " +
      "(additionalProperties at the top level must be false or absent)", path: "/additionalProperties"};
  }
  const props = parameters.properties;
  if (isObject(props) && Object.keys(props).length > MAX_STRICT_PARAMETERS) {
    return {reason: `parameters/properties: ${Object.keys(props).length} parameters (a strict tool is enforced with at most ${MAX_STRICT_PARAMETERS})`,
      path: "/properties"};
  }
  return null;
}

/**
 * Whether a strict tool's arguments can be enforced. Not when: the top level is not one object schema;
 * it allows undeclared parameters; it has more than MAX_STRICT_PARAMETERS parameters; it uses a refused
 * keyword other than pattern/format (the reason names the keyword and its path); or it does not compile
 * within the budgets.
 *
 * With `syntax` (the model family's, as the server decides it), the parameters are counted and compiled the way that
 * syntax writes them, one parameter per phase: the first argument phase holds every parameter (each later phase holds
 * fewer), so the verdict is that phase's: its names (the xml shape's markup, Gemma's bare keys, nested ones too), its
 * values (raw text for the xml shape's string parameters, a listed value that cannot be written left out and none
 * writable refused; Gemma's notation; JSON for the rest), its refused keywords and its budgets. The arguments as one
 * JSON object are not compiled then: no syntax writes them under one grammar. Without `syntax`, that JSON compile
 * stands in for it.
 */
export function strictEligibility(parameters: unknown, syntax?: CallSyntax, compile?: CompileOptions): Eligibility {
  const problem = structuralProblem(parameters);
  if (problem !== null) return {enforce: false, reason: problem.reason};
  try {
    if (syntax === undefined) compileSchema(parameters, {...compile, toolSchema: true});
    else argumentGrammar(syntax, {name: "eligibility", parameters, strict: true}, [], compile);
  } catch (err) {
    if (!(err instanceof SchemaError)) throw err;
    if (err.keyword !== null) {
      return {enforce: false, reason: `parameters${err.path}: the keyword "${err.keyword}" is not supported in a strict tool's parameters`};
    }
    return {enforce: false, reason: err.message};
  }
  return {enforce: true};
}

/** Where the phase whose grammar was bound ends in `text` (everything generated under it): null until the phase is
 * complete, then what the phase wrote. Every phase grammar ends exactly at its boundary, so this only has to tell a
 * complete phase from a prefix of one, and pull the names out. */
export function phaseBoundary(syntax: CallSyntax, phase: Phase, text: string): Boundary | null {
  return shapeOf(syntax).boundary(syntax, phase, text);
}

/** xml shape: the parameters whose values are raw text (their schema allows only strings); every other
 * parameter's value is JSON. The pipeline decodes the arguments with this, so the two always agree. */
export function xmlRawParameters(parameters: unknown, compile?: CompileOptions): string[] {
  const b = new ToolBuild(parameters, toolSettings(compile));
  return b.props.filter((p) => b.isRaw(p)).map((p) => p.key);
}
