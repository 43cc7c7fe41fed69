// Enforced tool calls as a chain of grammars, one phase at a time (src/grammar/tool-calls.ts builds each
// phase's grammar and recognises where it ends). A call is bound from its opener (or from the answer's
// start when a call is required); its name must be one of the request's tools; a strict tool's arguments
// come one parameter per phase, so they may be written in any order while every required parameter is
// still demanded and none is written twice.

import type {ToolsRequest} from "../core/generation.ts";
import type {GrammarRef} from "../engine/engine.ts";
import {afterCallGrammar, argumentGrammar, openGrammar, phaseBoundary, type Boundary, type PhaseGrammar, type ToolSpec} from "../grammar/index.ts";
import type {ToolSyntax} from "./reply/index.ts";

export type CallPhase =
  | {kind: "open"; fromReplyStart: boolean}
  | {kind: "argument"; tool: string; written: string[]}
  | {kind: "after"};

export type CallBoundary = Boundary;

export interface ToolCallGrammars {
  /** The text that opens a call in free text; null when a call can only start the reply (generic form). */
  readonly opener: string | null;
  grammar(phase: CallPhase): GrammarRef;
  /** Where the phase's text (everything since it was bound) reached its end, if it has. */
  boundary(phase: CallPhase, text: string): CallBoundary | null;
  /** The phase after a call closed, or null when the syntax needs none (the pipeline decides what follows). */
  afterCall(): CallPhase | null;
}

export function createToolCallGrammars(syntax: ToolSyntax, tools: ToolsRequest): ToolCallGrammars {
  const choice = tools.choice;
  const callable = choice.kind === "named" ? tools.tools.filter((t) => t.name === choice.name) : tools.tools;
  const byName = new Map<string, ToolSpec>(callable.map((t) => [t.name, {name: t.name, parameters: t.parameters ?? {type: "object"}, strict: t.enforced}]));
  const names = [...byName.keys()];
  const phaseGrammar = (phase: CallPhase): PhaseGrammar => {
    switch (phase.kind) {
      case "open":
        return openGrammar(syntax, names, {fromReplyStart: phase.fromReplyStart});
      case "argument":
        return argumentGrammar(syntax, byName.get(phase.tool)!, phase.written);
      case "after":
        return afterCallGrammar(syntax, {more: tools.parallel, names});
    }
  };
  return {
    opener: syntax === "generic" ? null : "<tool_call>",
    grammar: (phase) => {
      const g = phaseGrammar(phase);
      return {gbnf: g.gbnf, key: g.key};
    },
    boundary: (phase, text) => phaseBoundary(syntax, phaseGrammar(phase).phase, text),
    afterCall: () => (syntax === "generic" ? {kind: "after"} : null),
  };
}
