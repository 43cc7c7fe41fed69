// Enforced tool calls as a chain of grammars, one phase at a time (src/syntax/phases.ts builds each
// phase's grammar and recognises where it ends). A call is bound from its opener (or from the answer's
// start when a call is required); its name must be one of the request's tools; a strict tool's arguments
// come one parameter per phase, so they may be written in any order while every required parameter is
// still demanded and none is written twice. The syntax is the model family's CallSyntax (data).

import type {CallSyntax} from "../core/call-syntax.ts";
import type {ToolsRequest} from "../core/generation.ts";
import type {GrammarRef} from "../engine/index.ts";
import {
  afterCallGrammar, argumentGrammar, callOpeners, hasAfterPhase, openGrammar, phaseBoundary, shapeOf, type Boundary, type PhaseGrammar,
  type ToolSpec,
} from "../syntax/index.ts";
import {SchemaError} from "../grammar/index.ts";
import {GENERIC_CALLS} from "../templates/families/generic.ts";

export type CallPhase =
  | {kind: "open"; fromReplyStart: boolean}
  | {kind: "argument"; tool: string; written: string[]}
  | {kind: "after"};

export type CallBoundary = Boundary;

export interface ToolCallGrammars {
  /** The texts that open a call in free text (any one of them does); empty when calls can only start the
   * reply (the generic form, Llama 3). The open phase bound after one continues right after it. */
  readonly openers: readonly string[];
  /** With no openers: the JSON pieces a call starts the reply with (Llama 3's `{"name"`, the generic envelope). */
  readonly start: readonly string[] | null;
  grammar(phase: CallPhase): GrammarRef;
  /** Where the phase's text (everything since it was bound) reached its end, if it has. */
  boundary(phase: CallPhase, text: string): CallBoundary | null;
  /** The phase after a call closed, or null when the syntax has none (free text follows, watched for openers). */
  afterCall(): CallPhase | null;
  /** The prompt ends with one of the openers (Functionary v3.2's `>>>`): the reply starts in the open phase after it. */
  readonly openedByPrompt: boolean;
}

/** `syntax` null: the generic form (a template without tool calls of its own). `promptText`: the rendered prompt, to
 * see whether it ends with an opener. */
export function createToolCallGrammars(syntax: CallSyntax | null, tools: ToolsRequest, promptText: string | null = null): ToolCallGrammars {
  const calls = syntax ?? GENERIC_CALLS;
  const choice = tools.choice;
  const callable = choice.kind === "named" ? tools.tools.filter((t) => t.name === choice.name) : tools.tools;
  const byName = new Map<string, ToolSpec>(callable.map((t) => [t.name,
    servedAs(calls, {name: t.name, parameters: t.parameters ?? {type: "object"}, strict: t.enforced})]));
  const names = [...byName.keys()];
  const phaseGrammar = (phase: CallPhase): PhaseGrammar => {
    switch (phase.kind) {
      case "open":
        return openGrammar(calls, names, {fromReplyStart: phase.fromReplyStart});
      case "argument":
        return argumentGrammar(calls, byName.get(phase.tool)!, phase.written);
      case "after":
        return afterCallGrammar(calls, {more: tools.parallel, names});
    }
  };
  // The steering asks for the boundary at every token: keep this request's phases at hand rather than
  // hashing the schema again each time.
  const seen = new Map<string, PhaseGrammar>();
  const lookup = (phase: CallPhase): PhaseGrammar => {
    const id = JSON.stringify(phase);
    let g = seen.get(id);
    if (g === undefined) seen.set(id, (g = phaseGrammar(phase)));
    return g;
  };
  const after = hasAfterPhase(calls);
  const openers = callOpeners(calls);
  return {
    openers,
    openedByPrompt: promptText !== null && openers.some((o) => promptText.endsWith(o)),
    start: shapeOf(calls).start(calls)?.pieces ?? null,
    grammar: (phase) => {
      const g = lookup(phase);
      return {gbnf: g.gbnf, key: g.key};
    },
    boundary: (phase, text) => phaseBoundary(calls, lookup(phase).phase, text),
    afterCall: () => (after ? {kind: "after"} : null),
  };
}

/** A strict tool this syntax cannot enforce (a parameter name its markup cannot hold, a key Gemma cannot
 * write) is served as a non-strict one. The decoders already asked this model's pipeline (strictEligibility with this
 * syntax: logged and counted there), so this is a guard that agrees with them. */
function servedAs(syntax: CallSyntax, spec: ToolSpec): ToolSpec {
  if (!spec.strict) return spec;
  try {
    argumentGrammar(syntax, spec, []);
    return spec;
  } catch (err) {
    if (err instanceof SchemaError) return {...spec, strict: false};
    throw err;
  }
}
