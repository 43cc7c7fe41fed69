// Responses `input` (and `instructions`) → the template's chat messages. Every refusal names the item's
// field: `input[3].call_id`, `input[0].content[1]`. There is no response store, so everything the model
// should see must be in `input`; items that only point at stored state are refused.

import {invalidField} from "../../../core/errors.ts";
import type {TemplateMessage} from "../../../core/messages.ts";
import type {PictureCollector} from "../../fields/pictures.ts";

export interface ConvertedInput {
  messages: TemplateMessage[];
  /** The input holds an earlier assistant turn (a message or a function_call): the client sends its history. */
  hasHistory: boolean;
}

const INPUT_ROLES = new Set(["user", "assistant", "system", "developer"]);

const MEDIA: Record<string, string> = {
  input_image: "an image",
  input_file: "a file",
  input_audio: "audio",
};

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringAt(o: Obj, key: string, field: string): string {
  const v = o[key];
  if (typeof v !== "string") throw invalidField(`${field}.${key}`, v === undefined ? "is required (a string)" : "must be a string");
  return v;
}

function refuseMedia(type: string, field: string): void {
  const what = Object.hasOwn(MEDIA, type) ? MEDIA[type] : undefined;
  if (what) throw invalidField(field, `${what} was sent but this server has no vision tower loaded; send text only`);
}

/** An `input_image` part, read when the server has a vision tower: its marker text. */
function pictureOf(part: Obj, field: string, pictures: PictureCollector | null): string | null {
  if (part.type !== "input_image" || !pictures) return null;
  if (part.file_id !== undefined && part.file_id !== null) {
    throw invalidField(`${field}.file_id`, "points at an uploaded file, but this server has no file store; send the picture as image_url (a base64 data URL)");
  }
  return pictures.add(stringAt(part, "image_url", field), `${field}.image_url`);
}

/** A message's content: a string or text parts (output_text and refusal only on assistant turns). */
function messageText(item: Obj, role: string, field: string, pictures: PictureCollector | null): string {
  const c = item.content;
  if (typeof c === "string") return c;
  if (c === undefined || c === null) {
    if (role === "assistant") return "";
    throw invalidField(`${field}.content`, `is required for a ${role} message`);
  }
  if (!Array.isArray(c)) throw invalidField(`${field}.content`, "must be a string or an array of content parts");
  return c.map((part, j) => {
    const pf = `${field}.content[${j}]`;
    if (!isObj(part) || typeof part.type !== "string") throw invalidField(`${pf}.type`, "is required: a content part is {type: \"input_text\", text}");
    const assistant = role === "assistant";
    if (part.type === "input_text" || (part.type === "output_text" && assistant)) return stringAt(part, "text", pf);
    if (part.type === "refusal" && assistant) return stringAt(part, "refusal", pf);
    const picture = assistant ? null : pictureOf(part, pf, pictures);
    if (picture !== null) return picture;
    refuseMedia(part.type, pf);
    const allowed = assistant ? "\"output_text\", \"input_text\" or \"refusal\"" : "\"input_text\"";
    throw invalidField(`${pf}.type`, `"${part.type}" is not a content part type this server reads in a ${role} message (use ${allowed})`);
  }).join("");
}

/** A function_call_output's `output`: a string, or text parts (an image in it needs the vision tower). */
function toolOutputText(item: Obj, field: string, pictures: PictureCollector | null): string {
  const out = item.output;
  if (typeof out === "string") return out;
  if (!Array.isArray(out)) {
    throw invalidField(`${field}.output`,
      out === undefined ? "is required (a string or an array of content parts)" : "must be a string or an array of content parts");
  }
  return out.map((part, j) => {
    const pf = `${field}.output[${j}]`;
    if (!isObj(part) || typeof part.type !== "string") throw invalidField(`${pf}.type`, "is required: an output part is {type: \"input_text\", text}");
    if (part.type === "input_text" || part.type === "output_text") return stringAt(part, "text", pf);
    const picture = pictureOf(part, pf, pictures);
    if (picture !== null) return picture;
    refuseMedia(part.type, pf);
    throw invalidField(`${pf}.type`, `"${part.type}" is not an output part type this server reads (use "input_text")`);
  }).join("");
}

/** `pictures`: where `input_image` parts go when the model reads pictures; null: they are refused. */
export function convertInput(input: string | unknown[], instructions: string | null | undefined,
  pictures: PictureCollector | null = null): ConvertedInput {
  // `instructions` and every system/developer turn, in order, become one system message at the start:
  // chat templates generally accept a system message only there.
  const system: string[] = instructions ? [instructions] : [];
  const messages: TemplateMessage[] = [];
  let hasHistory = false;
  if (typeof input === "string") {
    messages.push({role: "user", content: input});
  } else {
    const calls = new Set<string>();
    input.forEach((item, i) => {
      const field = `input[${i}]`;
      if (!isObj(item)) throw invalidField(field, "must be an object (an input item)");
      const type = item.type ?? (item.role !== undefined ? "message" : undefined);
      switch (type) {
        case "message": {
          const role = item.role;
          if (typeof role !== "string" || !INPUT_ROLES.has(role)) {
            throw invalidField(`${field}.role`, `must be one of "user", "assistant", "system", "developer"${role === undefined ? " (it is missing)" : ""}`);
          }
          const text = messageText(item, role, field, pictures);
          if (role === "system" || role === "developer") {
            if (text) system.push(text);
          } else {
            if (role === "assistant") hasHistory = true;
            messages.push({role: role as "user" | "assistant", content: text});
          }
          return;
        }
        case "function_call": {
          const callId = stringAt(item, "call_id", field);
          if (!callId) throw invalidField(`${field}.call_id`, "must not be empty");
          const call = {id: callId, type: "function" as const, function: {name: stringAt(item, "name", field), arguments: stringAt(item, "arguments", field)}};
          calls.add(callId);
          hasHistory = true;
          // Calls of one turn (and a message the model wrote before them) are one assistant message.
          const last = messages.at(-1);
          if (last && last.role === "assistant") (last.tool_calls ??= []).push(call);
          else messages.push({role: "assistant", content: "", tool_calls: [call]});
          return;
        }
        case "function_call_output": {
          const callId = stringAt(item, "call_id", field);
          if (!calls.has(callId)) {
            throw invalidField(`${field}.call_id`,
              `"${callId}" matches no function_call item before it; there is no response store, so send the function_call item in input too`);
          }
          messages.push({role: "tool", content: toolOutputText(item, field, pictures), tool_call_id: callId});
          return;
        }
        case "reasoning":
          // No encrypted_content is ever produced, so an echoed reasoning item carries nothing to replay.
          return;
        case "item_reference":
          throw invalidField(`${field}.type`, "\"item_reference\" points at a stored item, but this server has no response store; send the item itself");
        case undefined:
          throw invalidField(`${field}.type`, "is required (an input item has a type, or a role for a message)");
        default:
          throw invalidField(`${field}.type`,
            `"${String(type)}" is not an input item type this server reads (message, function_call, function_call_output, reasoning)`);
      }
    });
  }
  if (system.length > 0) messages.unshift({role: "system", content: system.join("\n\n")});
  if (messages.length === 0) throw invalidField("input", "has nothing to answer: send at least one message");
  return {messages, hasHistory};
}
