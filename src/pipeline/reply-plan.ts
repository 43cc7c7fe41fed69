// What shape a reply takes and how it is bound, decided once per request from the template, the tools and
// the schema: how the text is parsed (reasoning, content, tool calls in the model's own syntax) and
// whether the reply needs steering (grammars that bind part-way through) or one grammar from the start.

import type {GenerationRequest, ToolsRequest} from "../core/generation.ts";
import type {GrammarRef} from "../engine/engine.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import {detectToolSyntax, type ReplyParserOptions, type ToolSyntax} from "./reply/index.ts";
import type {SteeringPlan} from "./steering.ts";
import {createToolCallGrammars} from "./tool-call-grammars.ts";

export const THINK_OPEN = "<think>";
export const THINK_CLOSE = "</think>";

export interface ReplyPlan {
  parser: ReplyParserOptions;
  /** Bound from the first token when no steering is needed (the request's schema, or null). */
  grammar: GrammarRef | null;
  steering: SteeringPlan | null;
  /** parallel_tool_calls: false — the reply ends when its first call closes. */
  stopAfterFirstCall: boolean;
  /** tool_choice "none": calls the model writes anyway are dropped, not returned. */
  dropCalls: boolean;
}

export interface PlanContext {
  template: ChatTemplate | null;
  /** The rendered prompt, to see whether it already opened the reasoning block. */
  promptText: string | null;
  /** The fitted token budget of the reply. */
  budget: number;
  /** SVC_SCHEMA_ESCAPE */
  schemaEscape: boolean;
  /** The token of a lone `{` (a JSON answer that starts inside a preamble token starts with it). */
  braceToken: number;
}

export function toolSyntaxOf(template: ChatTemplate | null): ToolSyntax {
  return template && template.supportsTools ? detectToolSyntax(template.source) : "generic";
}

export function planReply(req: GenerationRequest, ctx: PlanContext): ReplyPlan {
  const chat = req.prompt.kind === "chat" ? req.prompt : null;
  const thinking = chat !== null && ctx.template?.supportsThinking === true && chat.enableThinking !== false && !chat.continueFinalMessage;
  const inside = thinking && (ctx.promptText ?? "").trimEnd().endsWith(THINK_OPEN);
  const tools: ToolsRequest | null = chat ? (req.tools ?? null) : null;
  const syntax = tools ? toolSyntaxOf(ctx.template) : null;
  const parser: ReplyParserOptions = {
    syntax,
    tools: (tools?.tools ?? []).map((t) => ({name: t.name, parameters: t.parameters})),
    reasoning: thinking ? {open: THINK_OPEN, close: THINK_CLOSE, startsInside: inside} : null,
  };
  const choice = tools?.choice.kind ?? "none";
  const callsOffered = tools !== null && choice !== "none";
  const enforceCalls = callsOffered && (choice === "required" || choice === "named" || tools!.tools.some((t) => t.enforced));
  const calls = enforceCalls ? createToolCallGrammars(syntax!, tools!) : null;
  const schema = req.grammar;

  let answer: SteeringPlan["answer"];
  if (callsOffered && (choice === "required" || choice === "named")) answer = {kind: "call"};
  else if (schema) {
    const escape = callsOffered && ctx.schemaEscape && req.grammarRootObject === true;
    answer = {kind: "schema", grammar: schema, escape: escape ? {budget: ctx.budget, braceToken: ctx.braceToken} : null};
  } else answer = {kind: "free"};

  const base = {parser, stopAfterFirstCall: callsOffered && !tools!.parallel, dropCalls: tools !== null && choice === "none"};
  const bindsFromStart = answer.kind === "call" || (answer.kind === "schema" && answer.escape === null);
  // A thinking budget needs the steering to watch the block and close it.
  const budget = thinking && req.reasoningBudget != null ? req.reasoningBudget : null;
  // One grammar from the first token is enough when nothing comes before the answer and no call follows.
  if (!thinking && answer.kind === "schema" && answer.escape === null) return {...base, grammar: answer.grammar, steering: null};
  if (answer.kind === "free" && !calls && budget === null) return {...base, grammar: null, steering: null};
  const mode = !thinking ? "none" : inside ? "inside" : bindsFromStart ? "force-open" : "may-open";
  return {
    ...base,
    grammar: null,
    steering: {reasoning: {mode, open: THINK_OPEN, close: THINK_CLOSE, budget}, answer, calls, parallel: tools?.parallel ?? true},
  };
}
