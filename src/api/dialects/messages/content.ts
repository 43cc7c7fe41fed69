// system + messages (Anthropic content blocks) → the template's messages. Each refusal names the block's
// field (`messages[2].content[1].type`) and says what the server can do instead.
//
// Mapping: text blocks of one turn are joined with a blank line (Anthropic keeps them apart; a blank
// line keeps them apart in the prompt too). An assistant turn's tool_use blocks become its tool_calls;
// its thinking blocks become reasoning_content, taken from the signature (see signature.ts). A user
// turn's tool_result blocks become tool messages (in order, text blocks around them become user
// messages), and each must answer a tool_use of the assistant turn right before it.

import {invalidField} from "../../../core/errors.ts";
import type {PictureCollector} from "../../fields/pictures.ts";
import type {TemplateMessage, TemplateToolCall} from "../../../core/messages.ts";
import type {ContentBlockBody, MessageBody, MessagesBody} from "./schema.ts";
import {isOwnSignature, reasoningFromSignature} from "./signature.ts";
import {callIdOf} from "./tool-use-ids.ts";

const JOIN = "\n\n";

export interface Conversation {
  messages: TemplateMessage[];
  /** The last message is from the assistant: the reply continues it (Anthropic's prefill). */
  prefill: boolean;
}

const NO_TOWER = "this server has no vision tower loaded; send text only";

/** Blocks that are Anthropic's but that this server cannot read, with why. */
function refusedBlock(type: string, field: string): never {
  if (type === "image") throw invalidField(field, `an image was sent but ${NO_TOWER}`);
  if (type === "document") {
    throw invalidField(field, "document blocks (PDF or other) are not read by this server; extract the text and send it as a text block");
  }
  throw invalidField(`${field}.type`,
    `"${type}" is not a content block type this server reads here (text, tool_use, tool_result, thinking, redacted_thinking)`);
}

/** An image block's marker text (base64 sources only: no URL is ever fetched). */
function pictureOf(b: ContentBlockBody, field: string, pictures: PictureCollector): string {
  const source = (b as {source?: unknown}).source;
  if (typeof source !== "object" || source === null) throw invalidField(`${field}.source`, "is required: {type: \"base64\", media_type, data}");
  const {type, data} = source as {type?: unknown; data?: unknown};
  if (type !== "base64") {
    throw invalidField(`${field}.source.type`,
      `must be "base64" (got ${JSON.stringify(type)}): no URL or file is ever fetched; send the picture's bytes as base64`);
  }
  if (typeof data !== "string") throw invalidField(`${field}.source.data`, "is required: the picture as base64");
  return pictures.add(data, `${field}.source.data`);
}

function textOf(b: ContentBlockBody, field: string): string {
  const text = (b as {text?: unknown}).text;
  if (typeof text !== "string") throw invalidField(`${field}.text`, "must be a string");
  return text;
}

function stringField(b: ContentBlockBody, key: string, field: string): string {
  const v = (b as Record<string, unknown>)[key];
  if (typeof v !== "string" || v.length === 0) throw invalidField(`${field}.${key}`, "is required (a non-empty string)");
  return v;
}

/** The text of a tool_result: a string or text blocks; is_error is said in the text (templates have no flag for it). */
function toolResultText(b: ContentBlockBody, field: string, pictures: PictureCollector | null): string {
  const raw = (b as {content?: unknown}).content;
  let text: string;
  if (raw === undefined || raw === null) text = "";
  else if (typeof raw === "string") text = raw;
  else if (Array.isArray(raw)) {
    text = raw.map((part: unknown, k) => {
      const f = `${field}.content[${k}]`;
      if (typeof part !== "object" || part === null || typeof (part as {type?: unknown}).type !== "string") {
        throw invalidField(`${f}.type`, "is required: every content block has a type");
      }
      const p = part as ContentBlockBody;
      if (p.type === "text") return textOf(p, f);
      if (p.type === "image" && pictures) return pictureOf(p, f, pictures);
      return refusedBlock(p.type, f);
    }).join(JOIN);
  } else throw invalidField(`${field}.content`, "must be a string or an array of text blocks");
  const isError = (b as {is_error?: unknown}).is_error;
  if (isError !== undefined && isError !== null && typeof isError !== "boolean") throw invalidField(`${field}.is_error`, "must be a boolean");
  return isError === true ? (text ? `Error: ${text}` : "Error") : text;
}

/**
 * The reasoning a thinking block replays: the signature's, whatever the block's own text says. A block
 * signed elsewhere (a conversation that began on another server) cannot be read, so it is dropped like
 * redacted_thinking; one that claims to be ours and does not check out is refused.
 */
function thinkingOf(b: ContentBlockBody, field: string): string | null {
  const signature = (b as {signature?: unknown}).signature;
  if (typeof signature !== "string") throw invalidField(`${field}.signature`, "is required: send the thinking block back as this server returned it");
  if (!isOwnSignature(signature)) return null;
  const reasoning = reasoningFromSignature(signature);
  if (reasoning === null) {
    throw invalidField(`${field}.signature`,
      "is malformed or was altered; send thinking blocks back exactly as this server returned them");
  }
  return reasoning;
}

function assistantMessage(m: MessageBody, i: number, toolUseIds: Set<string>): TemplateMessage {
  if (typeof m.content === "string") return {role: "assistant", content: m.content};
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: TemplateToolCall[] = [];
  m.content.forEach((b, j) => {
    const field = `messages[${i}].content[${j}]`;
    switch (b.type) {
      case "text":
        texts.push(textOf(b, field));
        return;
      case "thinking": {
        const replayed = thinkingOf(b, field);
        if (replayed !== null) reasoning.push(replayed);
        return;
      }
      case "redacted_thinking":
        return; // Anthropic's encrypted reasoning: nothing here can read it.
      case "tool_use": {
        const id = stringField(b, "id", field);
        const name = stringField(b, "name", field);
        const input = (b as {input?: unknown}).input;
        if (typeof input !== "object" || input === null || Array.isArray(input)) {
          throw invalidField(`${field}.input`, "must be an object (the tool's arguments)");
        }
        if (toolUseIds.has(id)) throw invalidField(`${field}.id`, `"${id}" is used by two tool_use blocks of this message`);
        toolUseIds.add(id);
        calls.push({id: callIdOf(id), type: "function", function: {name, arguments: JSON.stringify(input)}});
        return;
      }
      case "tool_result":
        throw invalidField(field, "tool results in the wrong place: a tool_result belongs in the user message right after the assistant's tool_use");
      default:
        return refusedBlock(b.type, field);
    }
  });
  const out: TemplateMessage = {role: "assistant", content: texts.join(JOIN)};
  if (calls.length > 0) out.tool_calls = calls;
  if (reasoning.length > 0) out.reasoning_content = reasoning.join(JOIN);
  return out;
}

/** A user (or system-in-messages) turn: text runs become user messages, tool results tool messages, in order. */
function userMessages(m: MessageBody, i: number, answerable: ReadonlySet<string>, pictures: PictureCollector | null): TemplateMessage[] {
  if (typeof m.content === "string") return [{role: "user", content: m.content}];
  const out: TemplateMessage[] = [];
  let texts: string[] = [];
  const flush = () => {
    if (texts.length > 0) out.push({role: "user", content: texts.join(JOIN)});
    texts = [];
  };
  const answered = new Set<string>();
  m.content.forEach((b, j) => {
    const field = `messages[${i}].content[${j}]`;
    switch (b.type) {
      case "text":
        texts.push(textOf(b, field));
        return;
      case "image":
        if (!pictures) return refusedBlock(b.type, field);
        texts.push(pictureOf(b, field, pictures));
        return;
      case "tool_result": {
        if (m.role !== "user") {
          throw invalidField(field, `tool results in the wrong place: a tool_result belongs in a user message (this is a ${m.role} message)`);
        }
        const id = stringField(b, "tool_use_id", field);
        if (!answerable.has(id)) {
          throw invalidField(`${field}.tool_use_id`,
            `tool results in the wrong place: "${id}" answers no tool_use of the assistant message right before this one`);
        }
        if (answered.has(id)) throw invalidField(`${field}.tool_use_id`, `"${id}" is answered twice in this message`);
        answered.add(id);
        flush();
        out.push({role: "tool", content: toolResultText(b, field, pictures), tool_call_id: callIdOf(id)});
        return;
      }
      case "tool_use":
      case "thinking":
      case "redacted_thinking":
        throw invalidField(`${field}.type`, `"${b.type}" blocks belong in assistant messages`);
      default:
        return refusedBlock(b.type, field);
    }
  });
  flush();
  // A turn of only empty content still is a turn (the template shows it); keep its place.
  if (out.length === 0) out.push({role: "user", content: ""});
  return out;
}

/**
 * Claude Code opens its system prompt with a billing line (`x-anthropic-billing-header: cc_version=…;`)
 * whose suffix changes per thread. It says nothing to the model, and left in, it would make every thread's
 * prompt differ from its first tokens, so no thread could share the system prompt's cached state.
 */
const BILLING_LINE = /^x-anthropic-billing-header:/;

export function systemText(system: MessagesBody["system"]): string | null {
  if (system === undefined || system === null) return null;
  return typeof system === "string" ? system : system.filter((b) => !BILLING_LINE.test(b.text)).map((b) => b.text).join(JOIN);
}

/** `pictures`: where image blocks go when the model reads pictures; null: they are refused. */
export function decodeConversation(body: Pick<MessagesBody, "system" | "messages">, pictures: PictureCollector | null = null): Conversation {
  const messages: TemplateMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({role: "system", content: system});
  let toolUses = new Set<string>();
  body.messages.forEach((m, i) => {
    if (m.role === "assistant") {
      const ids = new Set<string>();
      messages.push(assistantMessage(m, i, ids));
      toolUses = ids;
    } else {
      messages.push(...userMessages(m, i, toolUses, pictures));
      toolUses = new Set();
    }
  });
  const last = body.messages[body.messages.length - 1]!;
  const prefill = last.role === "assistant";
  if (prefill && (messages[messages.length - 1]!.tool_calls?.length ?? 0) > 0) {
    throw invalidField(`messages[${body.messages.length - 1}]`,
      "the last message is the assistant's with tool_use: send the tool_result in a user message after it " +
        "(a final assistant message is continued, which a tool call cannot be)");
  }
  return {messages, prefill};
}
