// POST /v1/moderations in OpenAI's shape, answered by the moderation model's Safe/Unsafe/Controversial
// label. OpenAI's categories all read false and their scores 0 (the model's categories are not OpenAI's);
// `label` and `label_scores` carry the verdict. flagged = Unsafe, or Controversial with `strict: true`.

import {randomBytes} from "node:crypto";
import type {FastifyInstance} from "fastify";
import {ApiError, invalidField} from "../../../core/errors.ts";
import {ModerationRunner} from "../../../side-models/moderation/runner.ts";
import type {GuardTurn} from "../../../side-models/moderation/prompt.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";

/** Inputs per request: the spec is silent; each is a pass or part of one, so a request is kept sane. */
export const MAX_INPUTS = 1000;

/** OpenAI's moderation categories, every one reported false with score 0. */
export const OPENAI_CATEGORIES = ["harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
  "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence", "violence/graphic"] as const;

/** Names of the vendor's own moderation models: they reach the loaded moderation model. */
export function isVendorModerationName(model: unknown): boolean {
  return model === undefined || model === null || (typeof model === "string" && /^(omni-moderation-|text-moderation-)/.test(model));
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

export interface ModerationRequest {
  model: unknown;
  /** One conversation per result; each ends with the turn judged. */
  conversations: {param: string; turns: GuardTurn[]}[];
  strict: boolean;
}

export function decodeModeration(body: unknown): ModerationRequest {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object with input or messages");
  const strict = body.strict ?? false;
  if (typeof strict !== "boolean") throw invalidField("strict", "must be a boolean");
  const hasInput = body.input !== undefined && body.input !== null;
  const hasMessages = body.messages !== undefined && body.messages !== null;
  if (hasInput === hasMessages) {
    throw invalidField(hasInput ? "messages" : "input", "send either input (texts to judge) or messages (a conversation), not both nor neither");
  }
  if (hasMessages) return {model: body.model, conversations: [{param: "messages", turns: judgedTurns(body.messages)}], strict};
  return {model: body.model, conversations: readInput(body.input).map((text, i) => ({param: Array.isArray(body.input) ? `input[${i}]` : "input",
    turns: [{role: "user", content: text}]})), strict};
}

/** A string, an array of strings (one result each), or an array of text parts (one result for all). */
function readInput(input: unknown): string[] {
  if (typeof input === "string") return [input];
  if (!Array.isArray(input) || input.length === 0) throw invalidField("input", "must be a string, a non-empty array of strings, or an array of text parts");
  if (input.every((x) => typeof x === "string")) {
    if (input.length > MAX_INPUTS) throw invalidField("input", `at most ${MAX_INPUTS} inputs per request (found ${input.length})`);
    return input as string[];
  }
  const texts = input.map((p, i) => {
    if (isObject(p) && p.type === "text" && typeof p.text === "string") return p.text;
    if (isObject(p) && typeof p.type === "string" && p.type !== "text") throw invalidField(`input[${i}].type`, "the moderation model reads text parts only");
    throw invalidField(`input[${i}]`, "must be a string (all items) or a text part {type: \"text\", text} (all items)");
  });
  return [texts.join("\n")];
}

/** The conversation up to the judged turn: the last assistant reply when the last message is one, else the last user message. */
function judgedTurns(messages: unknown): GuardTurn[] {
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField("messages", "must be a non-empty array of chat messages");
  const turns: GuardTurn[] = [];
  messages.forEach((m, i) => {
    if (!isObject(m) || typeof m.role !== "string") throw invalidField(`messages[${i}]`, "must be an object with a role");
    if (m.role === "system" || m.role === "developer" || m.role === "tool") return;
    if (m.role !== "user" && m.role !== "assistant") throw invalidField(`messages[${i}].role`, "must be one of system, developer, user, assistant, tool");
    turns.push({role: m.role, content: contentText(m.content, `messages[${i}].content`)});
  });
  const last = messages[messages.length - 1] as Json;
  const cut = last.role === "assistant" ? turns.length : turns.map((t) => t.role).lastIndexOf("user") + 1;
  if (cut === 0) throw invalidField("messages", "needs a user message or a final assistant reply to judge");
  return turns.slice(0, cut);
}

function contentText(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (!Array.isArray(content)) throw invalidField(param, "must be a string or an array of text parts");
  return content.map((p, j) => {
    if (!isObject(p) || p.type !== "text" || typeof p.text !== "string") throw invalidField(`${param}[${j}]`, "the moderation model reads text parts only");
    return p.text;
  }).join("\n");
}

export function registerModerationRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  app.post("/v1/moderations", async (req, reply) => {
    const decoded = decodeModeration(req.body);
    const runner = side.pick<ModerationRunner>("moderation", decoded.model, {anyName: isVendorModerationName});
    const prompts = decoded.conversations.map((c) => {
      const p = runner.prompt(c.turns);
      if (p.tokens.length > runner.maxPromptTokens) {
        throw new ApiError("invalid_request",
          `${c.param}: the moderation prompt takes ${p.tokens.length} tokens with the template; the limit is ${runner.maxPromptTokens}`,
          {param: c.param});
      }
      return p;
    });
    const abort = hangUpSignal(req, reply);
    const verdicts = await runner.judge(prompts, {batching: deps.config.npuEmbBatch, signal: abort.signal});
    return {
      id: `modr-${randomBytes(12).toString("hex")}`,
      model: runner.id,
      results: verdicts.map((v) => ({
        flagged: v.label === "Unsafe" || (decoded.strict && v.label === "Controversial"),
        categories: Object.fromEntries(OPENAI_CATEGORIES.map((c) => [c, false])),
        category_scores: Object.fromEntries(OPENAI_CATEGORIES.map((c) => [c, 0])),
        category_applied_input_types: Object.fromEntries(OPENAI_CATEGORIES.map((c) => [c, ["text"]])),
        label: v.label,
        label_scores: v.scores,
      })),
      // Not in OpenAI's shape; what the prompts took (template included) and how much came from kept KV.
      usage: {prompt_tokens: verdicts.reduce((a, v) => a + v.promptTokens, 0), total_tokens: verdicts.reduce((a, v) => a + v.promptTokens, 0),
        cached_tokens: verdicts.reduce((a, v) => a + v.reused, 0)},
    };
  });
}
