// Decisions on the chat route: a decider id with a response_format whose schema lists the options. The
// messages are the text to judge; the question is json_schema.description (or the schema's own
// description), else the system message(s). The answer is never sampled: the most likely option, written
// as JSON in the schema's shape, in a chat.completion body or a one-chunk stream. temperature, top_p, seed
// and the penalties are accepted and ignored.

import {invalidField} from "../../../core/errors.ts";
import type {GenerationEvent, Timings, TokenLogprob} from "../../../core/generation.ts";
import type {DeciderRunner, DecisionOutcome} from "../../../side-models/decider/runner.ts";
import type {ServerDeps} from "../../deps.ts";
import type {WholeAnswer} from "../../model-router.ts";
import {checkDecisionPrompt} from "./limits.ts";
import {answerJson, questionOf, readSchemaOptions, type SchemaOptions} from "./schema-options.ts";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export interface DecisionChatRequest {
  text: string;
  question: string;
  options: SchemaOptions;
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** How many options' log probabilities to list (all when logprobs is on and top_logprobs absent). */
  topLogprobs: number;
}

export function decodeDecisionChat(body: unknown): DecisionChatRequest {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object");
  const rf = body.response_format;
  if (!isObject(rf) || rf.type !== "json_schema" || !isObject(rf.json_schema)) {
    throw invalidField("response_format",
      "a decision model needs {type: \"json_schema\", json_schema: {name, description, schema}} whose schema lists the options");
  }
  const options = readSchemaOptions(rf.json_schema.schema);
  if (body.n !== undefined && body.n !== 1) throw invalidField("n", "a decision has one answer; n must be 1");
  if (body.tools !== undefined && !(Array.isArray(body.tools) && body.tools.length === 0)) {
    throw invalidField("tools", "a decision model answers from its options and takes no tools");
  }
  const stream = optionalBoolean(body.stream, "stream") ?? false;
  const logprobs = optionalBoolean(body.logprobs, "logprobs") ?? false;
  let topLogprobs = options.values.length;
  if (body.top_logprobs !== undefined && body.top_logprobs !== null) {
    const t = body.top_logprobs;
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > 20) throw invalidField("top_logprobs", "must be an integer from 0 to 20");
    topLogprobs = Math.min(t, options.values.length);
  }
  const includeUsage = stream && isObject(body.stream_options) && body.stream_options.include_usage === true;

  const messages = readMessages(body.messages);
  const described = stringOrNull(rf.json_schema.description) ?? options.description;
  let question = described;
  let textMessages = messages;
  if (question === null) {
    const system = messages.filter((m) => m.role === "system" || m.role === "developer");
    if (system.length === 0) {
      throw invalidField("response_format.json_schema.description", "a decision needs its question: set the description, or send it as a system message");
    }
    question = system.map((m) => m.content).join("\n\n");
    textMessages = messages.filter((m) => m.role !== "system" && m.role !== "developer");
  }
  if (textMessages.length === 0 || textMessages.every((m) => m.content.trim() === "")) {
    throw invalidField("messages", "a decision needs a text to judge: at least one message besides the question");
  }
  return {text: textOf(textMessages), question, options, stream, includeUsage, logprobs, topLogprobs};
}

interface TextMessage {
  role: string;
  content: string;
}

function readMessages(raw: unknown): TextMessage[] {
  if (!Array.isArray(raw) || raw.length === 0) throw invalidField("messages", "must be a non-empty array of messages");
  return raw.map((m, i) => {
    if (!isObject(m) || typeof m.role !== "string") throw invalidField(`messages[${i}]`, "must be an object with a role");
    if (!["system", "developer", "user", "assistant", "tool"].includes(m.role)) {
      throw invalidField(`messages[${i}].role`, "must be one of system, developer, user, assistant, tool");
    }
    if (typeof m.content === "string") return {role: m.role, content: m.content};
    if (m.content === null || m.content === undefined) return {role: m.role, content: ""};
    if (!Array.isArray(m.content)) throw invalidField(`messages[${i}].content`, "must be a string or an array of text parts");
    const parts = m.content.map((p, j) => {
      if (!isObject(p) || p.type !== "text" || typeof p.text !== "string") {
        throw invalidField(`messages[${i}].content[${j}]`, "a decision reads text parts ({type: \"text\", text}) only");
      }
      return p.text;
    });
    return {role: m.role, content: parts.join("\n")};
  });
}

/** One message is the text as it is; several are written one per paragraph with their role. */
function textOf(messages: TextMessage[]): string {
  if (messages.length === 1) return messages[0]!.content;
  return messages.map((m) => `${m.role[0]!.toUpperCase()}${m.role.slice(1)}: ${m.content}`).join("\n\n");
}

function optionalBoolean(v: unknown, param: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw invalidField(param, "must be a boolean");
  return v;
}

function stringOrNull(v: unknown): string | null {
  return typeof v === "string" && v.trim() !== "" ? v : null;
}

/** A decider on the chat route: the request decoded by its rules, decided, and given back as events the chat dialect encodes. */
export function decisionAnswerer(deps: Pick<ServerDeps, "config">, runner: DeciderRunner): (body: unknown, signal: AbortSignal) => Promise<WholeAnswer> {
  return async (body, signal) => {
    const decoded = decodeDecisionChat(body);
    const prepared = runner.prepare(decoded.text, [questionOf(decoded.options, decoded.question)]);
    checkDecisionPrompt(prepared.questions[0]!.tokens.length, runner.maxPromptTokens, "messages");
    const outcome = await runner.decide(prepared, {resume: deps.config.npuDecResume, entries: deps.config.npuDecEntries, signal});
    return {id: runner.id, stream: decoded.stream, includeUsage: decoded.includeUsage, events: decisionEvents(decoded, outcome)};
  };
}

/** The answer as generation events, so the chat dialect's own encoders write the reply. */
export function decisionEvents(decoded: DecisionChatRequest, outcome: DecisionOutcome): GenerationEvent[] {
  const answer = outcome.answers[0]!;
  const text = answerJson(decoded.options, answer.best);
  const ranked = answer.logprobs.map((logprob, i) => ({i, logprob})).sort((a, b) => b.logprob - a.logprob || a.i - b.i);
  const alt = (i: number, logprob: number) => {
    const token = answerJson(decoded.options, i);
    return {token, logprob, bytes: [...Buffer.from(token, "utf8")]};
  };
  const logprobs: TokenLogprob[] | null = decoded.logprobs
    ? [{...alt(answer.best, answer.logprobs[answer.best]!), top_logprobs: ranked.slice(0, decoded.topLogprobs).map((r) => alt(r.i, r.logprob))}]
    : null;
  const evaluated = outcome.promptTokens - outcome.cachedTokens;
  const timings: Timings = {
    prompt_n: evaluated,
    prompt_ms: outcome.promptMs,
    prompt_per_second: outcome.promptMs > 0 ? (evaluated * 1000) / outcome.promptMs : 0,
    // The answer is one read position (the option tokens after the prompt), not a decoded token.
    predicted_n: 1,
    predicted_ms: 0,
    predicted_per_second: 0,
    cache_n: outcome.cachedTokens,
    draft_n: 0,
    draft_n_accepted: 0,
  };
  return [
    {type: "text", text},
    {type: "done", finishReason: "stop", stoppedBy: null, logprobs, timings,
      usage: {promptTokens: outcome.promptTokens, completionTokens: 1, cachedTokens: outcome.cachedTokens, reasoningTokens: 0}},
  ];
}
