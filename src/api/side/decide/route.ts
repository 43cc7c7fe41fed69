// POST /v1/decide: named questions about one text (`state`). Any name in `model` runs the loaded decision
// model. A malformed body is 422 (the spec's status for this route); a text over the limit is 400.
//
// Answers: choice → {choice, probabilities, confidence}; score → {score (expected level Σ level·p), legend,
// probabilities keyed "0".."n-1", confidence}; noul → {probability} (of yes). confidence is the probability
// of the most likely option. Probabilities are the options' shares of their own total (they sum to 1).

import type {FastifyInstance} from "fastify";
import {unprocessableField} from "../../../core/errors.ts";
import {DECISION_LIMITS, type DecisionQuestion} from "../../../side-models/decider/prompt.ts";
import type {DecisionAnswer} from "../../../side-models/decider/runner.ts";
import {DeciderRunner} from "../../../side-models/decider/runner.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";
import {checkDecisionPrompt} from "./limits.ts";

/** Questions per request: the spec is silent; each is one pass, so a request is kept to a sane number. */
export const MAX_QUESTIONS = 64;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export type NamedQuestion =
  | {name: string; type: "choice"; names: string[]; question: DecisionQuestion}
  | {name: string; type: "score"; levels: string[]; question: DecisionQuestion}
  | {name: string; type: "noul"; question: DecisionQuestion};

export interface DecideRequest {
  model: unknown;
  text: string;
  questions: NamedQuestion[];
}

const TOP_FIELDS = new Set(["model", "state", "questions"]);
const QUESTION_FIELDS = new Set(["type", "instructions", "criteria"]);

export function decodeDecide(body: unknown): DecideRequest {
  if (!isObject(body)) throw unprocessableField("body", "must be a JSON object with state and questions");
  for (const k of Object.keys(body)) if (!TOP_FIELDS.has(k)) throw unprocessableField(k, "is not a field of /v1/decide (fields: model, state, questions)");
  const text = readState(body.state);
  const raw = body.questions;
  if (!isObject(raw) || Object.keys(raw).length === 0) {
    throw unprocessableField("questions", "must be a non-empty object mapping question names to {type, instructions, criteria}");
  }
  const names = Object.keys(raw);
  if (names.length > MAX_QUESTIONS) throw unprocessableField("questions", `at most ${MAX_QUESTIONS} questions per request (found ${names.length})`);
  return {model: body.model, text, questions: names.map((name) => readQuestion(name, raw[name]))};
}

function readState(state: unknown): string {
  if (typeof state === "string") {
    if (state.trim() === "") throw unprocessableField("state", "must not be empty");
    return state;
  }
  if (isObject(state) || Array.isArray(state)) return JSON.stringify(state);
  throw unprocessableField("state", "must be a string, an object or an array (objects and arrays are read as JSON)");
}

function readQuestion(name: string, q: unknown): NamedQuestion {
  const p = `questions.${name}`;
  if (name.trim() === "") throw unprocessableField("questions", "question names must not be empty");
  if (!isObject(q)) throw unprocessableField(p, "must be an object {type, instructions, criteria}");
  for (const k of Object.keys(q)) {
    if (!QUESTION_FIELDS.has(k)) throw unprocessableField(`${p}.${k}`, "is not a question field (fields: type, instructions, criteria)");
  }
  if (typeof q.instructions !== "string" || q.instructions.trim() === "") {
    throw unprocessableField(`${p}.instructions`, "must be a non-empty string: the question to answer");
  }
  const question = q.instructions;
  const {minOptions: min, maxOptions: max} = DECISION_LIMITS;
  switch (q.type) {
    case "choice": {
      const c = q.criteria;
      if (!isObject(c)) throw unprocessableField(`${p}.criteria`, "a choice needs criteria: an object mapping option names to a description or null");
      const names = Object.keys(c);
      if (names.length < min || names.length > max) {
        throw unprocessableField(`${p}.criteria`, `a choice takes ${min} to ${max} options (found ${names.length})`);
      }
      const options = names.map((n) => {
        const d = c[n];
        if (n.trim() === "") throw unprocessableField(`${p}.criteria`, "option names must not be empty");
        if (d !== null && typeof d !== "string") throw unprocessableField(`${p}.criteria.${n}`, "must be a description string or null");
        return {label: n, description: d};
      });
      return {name, type: "choice", names, question: {kind: "options", question, options}};
    }
    case "score": {
      const c = q.criteria;
      if (!Array.isArray(c)) throw unprocessableField(`${p}.criteria`, "a score needs criteria: an array of level descriptions, level 0 first");
      if (c.length < min || c.length > max) throw unprocessableField(`${p}.criteria`, `a score takes ${min} to ${max} levels (found ${c.length})`);
      c.forEach((l, i) => {
        if (typeof l !== "string" || l.trim() === "") throw unprocessableField(`${p}.criteria[${i}]`, "must be a non-empty level description");
      });
      return {name, type: "score", levels: c as string[], question: {kind: "levels", question, levels: c as string[]}};
    }
    case "noul":
      if (q.criteria !== undefined && q.criteria !== null) throw unprocessableField(`${p}.criteria`, "a noul (yes/no) question takes no criteria");
      return {name, type: "noul", question: {kind: "yes-no", question}};
    default:
      throw unprocessableField(`${p}.type`, "must be one of choice, score, noul");
  }
}

export function answerOf(q: NamedQuestion, a: DecisionAnswer): Record<string, unknown> {
  const confidence = a.probabilities[a.best]!;
  switch (q.type) {
    case "choice":
      return {choice: q.names[a.best], probabilities: Object.fromEntries(q.names.map((n, i) => [n, a.probabilities[i]])), confidence};
    case "score":
      return {
        score: a.probabilities.reduce((s, p, i) => s + i * p, 0),
        legend: Object.fromEntries(q.levels.map((l, i) => [String(i), l])),
        probabilities: Object.fromEntries(a.probabilities.map((p, i) => [String(i), p])),
        confidence,
      };
    case "noul":
      return {probability: a.probabilities[0]};
  }
}

/** A body that was not JSON, kept so the route can answer 422 like any other malformed body. */
class UnparsedBody {
  constructor(readonly reason: string) {}
}

export function registerDecideRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  // In a scope of its own, whose JSON parser hands a broken body to the route instead of failing with the
  // server-wide 400: the spec answers every malformed /v1/decide request with 422.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", {parseAs: "buffer"}, (_req, body, done) => {
      const bytes = body as Buffer;
      if (bytes.length === 0) return done(null, undefined);
      try {
        done(null, JSON.parse(new TextDecoder("utf-8", {fatal: true}).decode(bytes)));
      } catch (err) {
        done(null, new UnparsedBody((err as Error).message));
      }
    });
    registerDecide(scope, deps, side);
  });
}

function registerDecide(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  app.post("/v1/decide", async (req, reply) => {
    if (req.body instanceof UnparsedBody) throw unprocessableField("body", `is not valid JSON (${req.body.reason})`);
    const decoded = decodeDecide(req.body);
    const runner = side.pick<DeciderRunner>("decider", decoded.model, {anyName: () => true});
    const prepared = runner.prepare(decoded.text, decoded.questions.map((q) => q.question));
    prepared.questions.forEach((q, i) => checkDecisionPrompt(q.tokens.length, runner.maxPromptTokens, `questions.${decoded.questions[i]!.name}`));
    const abort = hangUpSignal(req, reply);
    const outcome = await runner.decide(prepared, {resume: deps.config.npuDecResume, entries: deps.config.npuDecEntries, signal: abort.signal});
    const evaluated = outcome.promptTokens - outcome.cachedTokens;
    return {
      object: "decision",
      model: runner.id,
      answers: Object.fromEntries(decoded.questions.map((q, i) => [q.name, answerOf(q, outcome.answers[i]!)])),
      usage: {prompt_tokens: outcome.promptTokens, cached_tokens: outcome.cachedTokens, total_tokens: outcome.promptTokens},
      timings: {prompt_n: evaluated, prompt_ms: outcome.promptMs, cache_n: outcome.cachedTokens, passes: outcome.answers.length},
    };
  });
}
