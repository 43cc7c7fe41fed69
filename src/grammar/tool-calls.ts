// Grammars for strict tool calls, one phase at a time. The pipeline enforces a call by switching grammars
// at boundaries: it binds a phase grammar, watches the text (phaseBoundary), and at the boundary binds
// the next phase's grammar from the next token. So every phase grammar ENDS EXACTLY at its boundary:
// once it is complete nothing more may follow, and no token can run past it. Arguments are one
// parameter per phase because a strict tool's parameters may come in any order: the pipeline passes the
// set already written, which is how "every required parameter" and "no duplicate" hold across phases.
//
// Phases and where they start and end (WS is the bounded `ws` rule):
//   openGrammar     qwen-xml  (WS "<tool_call>\n" | "\n"?) "<function=" NAME ">"           ends after ">"
//                   hermes    [WS "<tool_call>"] WS "{" WS "\"name\"" WS ":" WS "\"NAME\"" WS "," WS
//                             "\"arguments\"" WS ":"                                        ends after ":"
//                   generic   [WS "{" WS "\"tool_calls\"" WS ":" WS "["] then the hermes call opening
//   argumentGrammar qwen-xml  "\n"? ( "<parameter=P>\n" VALUE "\n</parameter>"              ends after "</parameter>"
//                                   | "</function>" "\n"? "</tool_call>" )                  ends after "</tool_call>"
//                   JSON      WS ["{" WS] ( "\"P\"" WS ":" WS VALUE WS ( "," | CLOSE ) | CLOSE )
//                             CLOSE = "}" WS "}" WS "</tool_call>" (hermes) / "}" WS "}" (generic)
//   afterCallGrammar generic  WS ( "," <call opening> | "]" WS "}" )                          ends after ":" / "}"
// The bracketed parts, and the first choice for qwen-xml, are the fromReplyStart / first-phase variants. `,` is offered only while some
// parameter is left to write, CLOSE only once every required one is written (the empty `{}` only in the
// first phase): no phase can lead to a dead end, and a trailing comma is never possible.
//
// Strict tools (the spec): enforced keywords as in structured output, every required parameter, no
// undeclared one (an absent top-level additionalProperties counts as false); `pattern` and `format` are
// accepted and not enforced; anything else unenforceable makes the tool ineligible (strictEligibility),
// and the pipeline then serves it as a non-strict tool: name constrained, arguments any JSON object
// (hermes/generic) or any parameters with raw text values (qwen-xml; a name already written cannot be
// excluded there: GBNF has no "any name but these" short of spelling every name out, see keys.ts).
//
// qwen-xml values: a parameter whose schema allows only strings (type "string", string enum/const, a
// union or $ref of those) is raw text, not quoted; any other is JSON from the ordinary compiler. Raw
// text may not have a line that STARTS with "</parameter>" (mid-line it is fine): that is what makes
// "\n</parameter>" an unambiguous end. A bounded raw string (minLength/maxLength) is one line, with its
// length counted in characters; an unbounded one may span lines (see tool-build.ts for why).

import {compileSchema, schemaKey, type CompileOptions} from "./compile.ts";
import {invalid, SchemaError, seg} from "./errors.ts";
import {alt, cls, lit, opt, ref, rep, seq, type Expr} from "./gbnf.ts";
import {namePart} from "./generate.ts";
import type {Phase, ToolSpec, ToolSyntax} from "./tool-boundary.ts";
import {ToolBuild, toolSettings, WS, XML_CLOSER, type Settings} from "./tool-build.ts";

export type {Boundary, Phase, ToolSpec, ToolSyntax} from "./tool-boundary.ts";
export {phaseBoundary} from "./tool-boundary.ts";

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

const SYNTAXES: readonly ToolSyntax[] = ["qwen-xml", "hermes", "generic"];
/** Tool names as OpenAI allows them; written verbatim inside JSON strings and XML tags, never escaped. */
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

function cached(inputs: Record<string, unknown>, s: Settings, phase: Phase, build: () => string): PhaseGrammar {
  const key = schemaKey({grammar: "tool-call", ...inputs}, s);
  const hit = CACHE.get(key);
  if (hit !== undefined) return hit;
  const out: PhaseGrammar = Object.freeze({gbnf: build(), key, phase});
  CACHE.set(key, out);
  return out;
}

function checkSyntax(syntax: ToolSyntax): void {
  if (!SYNTAXES.includes(syntax)) throw new TypeError(`tool-call syntax ${JSON.stringify(syntax)} is not one of ${SYNTAXES.join(", ")}`);
}

/** The names, checked, without repeats, sorted (so one set of tools is one grammar and one key). */
function toolNames(names: readonly string[]): string[] {
  if (!Array.isArray(names) || names.length === 0) throw new TypeError("a tool call needs at least one tool name");
  for (const n of names) if (!isToolName(n)) throw new TypeError(`tool name ${JSON.stringify(n)}: a tool name is 1 to 64 of a-z A-Z 0-9 _ -`);
  return [...new Set(names)].sort();
}

/** `{ "name": "NAME", "arguments":` — the opening of one call object in the JSON syntaxes. */
function callOpening(b: ToolBuild, names: string[]): Expr {
  const name = b.rule("tool-name", alt(...names.map((n) => lit(`"${n}"`))));
  return seq(WS, lit("{"), WS, lit('"name"'), WS, lit(":"), WS, name, WS, lit(","), WS, lit('"arguments"'), WS, lit(":"));
}

/** From the current position up to and including the tool name (see the header for each syntax).
 * fromReplyStart false: the model already wrote `<tool_call>` (qwen-xml, hermes) freely; for generic
 * it is the opening of a call object after a `,` (same as nextGenericCall). */
export function openGrammar(syntax: ToolSyntax, names: readonly string[], opts: {fromReplyStart: boolean}, compile?: CompileOptions): PhaseGrammar {
  checkSyntax(syntax);
  const list = toolNames(names);
  const from = opts.fromReplyStart === true;
  const s = toolSettings(compile);
  return cached({phase: "open", syntax, names: list, fromReplyStart: from}, s, {kind: "open"}, () => {
    const b = new ToolBuild(null, s);
    if (syntax === "qwen-xml") {
      const name = b.rule("tool-name", alt(...list.map(lit)));
      return b.finish(seq(from ? seq(WS, lit("<tool_call>\n")) : opt(lit("\n")), lit("<function="), name, lit(">")));
    }
    if (syntax === "hermes") return b.finish(seq(from ? seq(WS, lit("<tool_call>")) : lit(""), callOpening(b, list)));
    const reply = seq(WS, lit("{"), WS, lit('"tool_calls"'), WS, lit(":"), WS, lit("["));
    return b.finish(seq(from ? reply : lit(""), callOpening(b, list)));
  });
}

/** generic: the opening of another call object, for a pipeline that binds right after the `,`. */
export function nextGenericCall(names: readonly string[], compile?: CompileOptions): PhaseGrammar {
  return openGrammar("generic", names, {fromReplyStart: false}, compile);
}

/** What closes the call after the arguments object's own `}` (hermes: the envelope and its tag). */
function envelopeClose(syntax: "hermes" | "generic"): Expr {
  return syntax === "hermes" ? seq(lit("}"), WS, lit("</tool_call>")) : lit("}");
}

const XML_CALL_CLOSE = seq(lit("</function>"), opt(lit("\n")), lit("</tool_call>"));

/**
 * The next parameter not in `written`, or the end of the call (only once every required parameter is
 * written). JSON syntaxes: `written` empty means the `{` is not written yet. A non-strict tool's
 * arguments are one phase in hermes/generic (any JSON object, then the close), and one parameter with
 * any name and raw text per phase in qwen-xml. Throws SchemaError for a strict tool whose schema is
 * not enforceable (check strictEligibility first), TypeError for a `written` name not declared.
 */
export function argumentGrammar(syntax: ToolSyntax, tool: ToolSpec, written: readonly string[], compile?: CompileOptions): PhaseGrammar {
  checkSyntax(syntax);
  const s = toolSettings(compile);
  const done = [...new Set(written)].sort();
  if (!tool.strict) return cached({phase: "argument", syntax, strict: false}, s, {kind: "argument", strict: false}, () => anyArguments(syntax, s));
  const problem = structuralProblem(tool.parameters);
  if (problem !== null) throw new SchemaError(problem.reason, problem.path);
  return cached({phase: "argument", syntax, strict: true, parameters: tool.parameters, written: done}, s, {kind: "argument", strict: true}, () =>
    strictArguments(syntax, tool.parameters, done, s),
  );
}

function anyArguments(syntax: ToolSyntax, s: Settings): string {
  const b = new ToolBuild(null, s);
  if (syntax !== "qwen-xml") return b.finish(seq(WS, ref("object"), WS, envelopeClose(syntax)));
  const name = b.rule("parameter-name", rep(cls("[a-zA-Z0-9_.-]"), 1, null));
  const parameter = seq(lit("<parameter="), name, lit(">\n"), b.rawText(), lit("\n" + XML_CLOSER));
  return b.finish(seq(opt(lit("\n")), alt(parameter, XML_CALL_CLOSE)));
}

function strictArguments(syntax: ToolSyntax, parameters: unknown, written: string[], s: Settings): string {
  const b = new ToolBuild(parameters, s);
  for (const w of written) b.prop(w);
  if (syntax === "qwen-xml") for (const p of b.props) checkXmlName(p.key);
  const done = new Set(written);
  const left = b.props.filter((p) => !done.has(p.key));
  const requiredLeft = left.filter((p) => p.required).map((p) => p.key);
  const hint = (key: string) => `arg-${namePart(key, "key")}`;
  if (syntax === "qwen-xml") {
    const params = left.map((p) => b.rule(hint(p.key), seq(lit(`<parameter=${p.key}>\n`), b.rawValue(p) ?? b.jsonValue(p), lit("\n" + XML_CLOSER))));
    return b.finish(seq(opt(lit("\n")), alt(...params, ...(requiredLeft.length === 0 ? [XML_CALL_CLOSE] : []))));
  }
  const first = done.size === 0;
  // After a `,` a pair must follow; the phase before offers `,` only when one is left.
  if (!first && left.length === 0) throw new TypeError("every parameter is written: no phase follows the last one");
  const close = seq(lit("}"), WS, envelopeClose(syntax));
  const pairs = left.map((p) => {
    const delims: Expr[] = [];
    if (left.length > 1) delims.push(lit(","));
    if (requiredLeft.every((r) => r === p.key)) delims.push(close);
    return b.rule(hint(p.key), seq(lit(JSON.stringify(p.key)), WS, lit(":"), WS, b.jsonValue(p), WS, alt(...delims)));
  });
  const choices = first && requiredLeft.length === 0 ? [...pairs, close] : pairs;
  return b.finish(seq(WS, first ? seq(lit("{"), WS) : lit(""), alt(...choices)));
}

/** qwen-xml writes parameter names bare inside `<parameter=...>`: one with `>` or a line break in it
 * would make the header ambiguous. */
function checkXmlName(key: string): void {
  if (key === "" || /[>\r\n]/.test(key)) {
    throw invalid(seg("properties") + seg(key), `the parameter name ${JSON.stringify(key)} cannot be written in a qwen-xml tool call (empty, or it holds ">" or a line break)`);
  }
}

/**
 * generic only: after a call object closed. `more`: another call may follow: `,` and the next call's
 * opening up to its `"arguments":` ({kind: "more", name}); always: the end of the reply `]}` ({kind:
 * "end"}). qwen-xml and hermes need none: the pipeline handles what follows a call itself.
 */
export function afterCallGrammar(syntax: ToolSyntax, opts: {more: boolean; names: readonly string[]}, compile?: CompileOptions): PhaseGrammar {
  if (syntax !== "generic") throw new TypeError(`afterCallGrammar is for the generic syntax only, not ${JSON.stringify(syntax)}`);
  const more = opts.more === true;
  const list = more ? toolNames(opts.names) : [];
  const s = toolSettings(compile);
  return cached({phase: "after", syntax, more, names: list}, s, {kind: "after"}, () => {
    const b = new ToolBuild(null, s);
    const end = seq(lit("]"), WS, lit("}"));
    return b.finish(seq(WS, more ? alt(seq(lit(","), callOpening(b, list)), end) : end));
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** What makes a parameters schema unfit for one-parameter-per-phase enforcement before compiling it. */
function structuralProblem(parameters: unknown): {reason: string; path: string} | null {
  const notObject = (why: string) => ({reason: `the parameters schema is not an object schema (${why}); a strict tool's parameters must be {"type": "object", "properties": {...}}`, path: ""});
  if (!isObject(parameters)) return notObject(parameters === null ? "null" : Array.isArray(parameters) ? "an array" : typeof parameters);
  const type = parameters.type;
  if (type !== undefined && !(type === "object" || (Array.isArray(type) && type.includes("object")))) return notObject(`type ${JSON.stringify(type)}`);
  if (type === undefined && !Object.hasOwn(parameters, "properties")) return notObject("no type and no properties");
  // The arguments are written one parameter per phase, so the top level must be one list of properties.
  for (const kw of ["anyOf", "oneOf", "$ref", "enum", "const"]) {
    if (Object.hasOwn(parameters, kw)) return {reason: `parameters/${kw}: the top level of a strict tool's parameters must be one object schema, not ${kw}`, path: seg(kw)};
  }
  const extra = parameters.additionalProperties;
  if (extra !== undefined && extra !== false) {
    return {reason: "parameters/additionalProperties: the tool allows parameters it does not declare (additionalProperties at the top level must be false or absent)", path: "/additionalProperties"};
  }
  const props = parameters.properties;
  if (isObject(props) && Object.keys(props).length > MAX_STRICT_PARAMETERS) {
    return {reason: `parameters/properties: ${Object.keys(props).length} parameters (a strict tool is enforced with at most ${MAX_STRICT_PARAMETERS})`, path: "/properties"};
  }
  return null;
}

/**
 * Whether a strict tool's arguments can be enforced. Not when: the top level is not one object schema;
 * it allows undeclared parameters; it has more than MAX_STRICT_PARAMETERS parameters; it uses a refused
 * keyword other than pattern/format (the reason names the keyword and its path); or it does not compile
 * within the budgets. With `syntax`, that syntax's own limits count too (qwen-xml parameter names, its
 * first argument phase within the budgets).
 */
export function strictEligibility(parameters: unknown, syntax?: ToolSyntax, compile?: CompileOptions): Eligibility {
  const problem = structuralProblem(parameters);
  if (problem !== null) return {enforce: false, reason: problem.reason};
  try {
    compileSchema(parameters, {...compile, toolSchema: true});
    if (syntax !== undefined) argumentGrammar(syntax, {name: "eligibility", parameters, strict: true}, [], compile);
  } catch (err) {
    if (!(err instanceof SchemaError)) throw err;
    if (err.keyword !== null) return {enforce: false, reason: `parameters${err.path}: the keyword "${err.keyword}" is not supported in a strict tool's parameters`};
    return {enforce: false, reason: err.message};
  }
  return {enforce: true};
}

/** qwen-xml: the parameters whose values are raw text (their schema allows only strings); every other
 * parameter's value is JSON. The pipeline decodes the arguments with this, so the two always agree. */
export function xmlRawParameters(parameters: unknown, compile?: CompileOptions): string[] {
  const b = new ToolBuild(parameters, toolSettings(compile));
  return b.props.filter((p) => b.rawValue(p) !== null).map((p) => p.key);
}
