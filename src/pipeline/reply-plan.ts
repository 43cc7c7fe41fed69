// What shape a reply takes and how it is bound, decided once per request from the template, the tools and
// the schema: how the text is parsed (reasoning, content, tool calls in the model's own syntax) and
// whether the reply needs steering (grammars that bind part-way through) or one grammar from the start.

import type {CompiledFormat} from "./response-format.ts";
import type {CallSyntax} from "../core/call-syntax.ts";
import type {GenerationRequest, ToolsRequest} from "../core/generation.ts";
import type {GrammarRef} from "../engine/index.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import {generic, type ModelFamily} from "../templates/families/index.ts";
import {GENERIC_CALLS} from "../templates/families/generic.ts";
import type {ReplyParserOptions} from "./reply/index.ts";
import type {SteeringPlan} from "./steering.ts";
import {createToolCallGrammars} from "./tool-call-grammars.ts";
import {withAnswerPrefix} from "../grammar/index.ts";
import {shapeOf} from "../syntax/index.ts";

export interface ReplyPlan {
  parser: ReplyParserOptions;
  /** Bound from the first token when no steering is needed (the request's schema, or null). */
  grammar: GrammarRef | null;
  steering: SteeringPlan | null;
  /**
   * The most calls the reply may hold: it ends when that many have closed. One under parallel_tool_calls: false,
   * else the server's cap (SVC_MAX_TOOL_CALLS), which bounds a model that goes on calling. Null when no call is offered.
   */
  callLimit: CallLimit | null;
  /** tool_choice "none": calls the model writes anyway are dropped, not returned. */
  dropCalls: boolean;
}

export interface CallLimit {
  max: number;
  by: "parallel_tool_calls" | "max_tool_calls" | "SVC_MAX_TOOL_CALLS";
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
  /** SVC_MAX_TOOL_CALLS */
  maxToolCalls: number;
  /** The request's response format, compiled (response-format.ts); null = free text. */
  answerGrammar: CompiledFormat | null;
}

/** The family whose syntax the replies are read in (the generic family without a template). */
export function familyOf(template: ChatTemplate | null): ModelFamily {
  return template?.family ?? generic;
}

/**
 * The call syntax replies use: the family's own when the template can show the model its tools, otherwise the
 * generic form (taught in a system message: GenerationPipeline.prompt).
 */
export function callSyntaxOf(template: ChatTemplate | null): {syntax: CallSyntax; generic: boolean} {
  const own = familyOf(template).calls;
  return template?.supportsTools && own ? {syntax: own, generic: false} : {syntax: GENERIC_CALLS, generic: true};
}

/** For /health: the family whose call syntax is read, or "generic". */
export function toolSyntaxOf(template: ChatTemplate | null): string {
  return callSyntaxOf(template).generic ? "generic" : familyOf(template).id;
}

/** Replies are read for the family's reasoning block when the template knows it (a switch, the markers, or a reply
 * header that opens the block: Kimi K3 builds its markers in macros). */
function reasons(template: ChatTemplate | null): boolean {
  const markers = familyOf(template).reasoning;
  return template !== null && markers !== null &&
    (template.supportsThinking || template.source.includes(markers.open) || (template.replyHeader?.trimEnd().endsWith(markers.open) ?? false));
}

export function planReply(req: GenerationRequest, ctx: PlanContext): ReplyPlan {
  const family = familyOf(ctx.template);
  const markers = family.reasoning;
  const chat = req.prompt.kind === "chat" ? req.prompt : null;
  const thinking = chat !== null && markers !== null && reasons(ctx.template) && chat.enableThinking !== false && !chat.continueFinalMessage;
  const inside = thinking && (ctx.promptText ?? "").trimEnd().endsWith(markers!.open);
  const tools: ToolsRequest | null = chat ? (req.tools ?? null) : null;
  const calls = tools ? callSyntaxOf(ctx.template) : null;
  // A family whose shape reads whole replies (harmony's channels) has no free text before a JSON answer to escape into.
  const ownReader = chat !== null && family.calls !== null && shapeOf(family.calls).reader !== undefined;
  const parser: ReplyParserOptions = {
    calls: calls?.syntax ?? null,
    tools: (tools?.tools ?? []).map((t) => ({name: t.name, parameters: t.parameters})),
    reasoning: thinking ? {open: markers!.open, close: markers!.close, startsInside: inside} : null,
    layout: family.layout,
    familyCalls: chat !== null ? family.calls : null,
  };
  const choice = tools?.choice.kind ?? "none";
  const callsOffered = tools !== null && choice !== "none";
  const enforceCalls = callsOffered && (choice === "required" || choice === "named" || tools!.tools.some((t) => t.enforced));
  const grammars = enforceCalls ? createToolCallGrammars(calls!.generic ? null : calls!.syntax, tools!, ctx.promptText) : null;
  // A JSON answer binds after whatever the family writes before an answer (gpt-oss: the final channel's header).
  const compiled = ctx.answerGrammar && {gbnf: ctx.answerGrammar.gbnf, key: ctx.answerGrammar.key};
  const schema = compiled && family.answerLeadIn && chat !== null ? withAnswerPrefix(compiled, family.answerLeadIn) : compiled;

  let answer: SteeringPlan["answer"];
  if (callsOffered && (choice === "required" || choice === "named")) answer = {kind: "call"};
  else if (schema) {
    // The free preamble before a JSON answer is read as text, which harmony replies are not.
    const escape = callsOffered && ctx.schemaEscape && ctx.answerGrammar?.rootObject === true && !ownReader;
    answer = {kind: "schema", grammar: schema, escape: escape ? {budget: ctx.budget, braceToken: ctx.braceToken} : null};
  } else answer = {kind: "free"};

  const callLimit: CallLimit | null = !callsOffered ? null
    : !tools!.parallel ? {max: 1, by: "parallel_tool_calls"}
    : tools!.maxCalls !== undefined && tools!.maxCalls < ctx.maxToolCalls ? {max: tools!.maxCalls, by: "max_tool_calls"}
    : {max: ctx.maxToolCalls, by: "SVC_MAX_TOOL_CALLS"};
  const base = {parser, callLimit, dropCalls: tools !== null && choice === "none"};
  const bindsFromStart = answer.kind === "call" || (answer.kind === "schema" && answer.escape === null);
  // A thinking budget needs the steering to watch the block and close it.
  const budget = thinking && req.reasoningBudget != null ? req.reasoningBudget : null;
  // One grammar from the first token is enough when nothing comes before the answer and no call follows.
  if (!thinking && answer.kind === "schema" && answer.escape === null) return {...base, grammar: answer.grammar, steering: null};
  if (answer.kind === "free" && !grammars && budget === null) return {...base, grammar: null, steering: null};
  const mode = !thinking ? "none" : inside ? "inside" : bindsFromStart ? "force-open" : "may-open";
  const open = markers?.open ?? "";
  const close = markers?.close ?? "";
  return {
    ...base,
    grammar: null,
    steering: {reasoning: {mode, open, close, budget}, answer, calls: grammars, parallel: tools?.parallel ?? true},
  };
}
