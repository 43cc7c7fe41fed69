// Small renders run once when a template is loaded, to learn what its text does not say plainly: whether it
// expects tool-call arguments as an object, how it writes a call (family detection reads it), what opens an
// assistant turn, and whether a plain conversation survives it (the self-check /health reports).

import type {RenderOptions, TemplateMessage} from "./chat-template.ts";
import {TemplateRenderError} from "./template-env.ts";

export interface Renders {
  render(messages: TemplateMessage[], opts: RenderOptions & {argumentsAsObject?: boolean}): {text: string};
}

const QUESTION: TemplateMessage = {role: "user", content: "svc probe question"};
const PROBE_ARGS = '{"svc_probe_arg":"svc_probe_value"}';

function probeCall(): TemplateMessage {
  // Nine alphanumerics: Mistral-family templates reject any other tool-call id.
  return {role: "assistant", content: "", tool_calls: [{id: "svcprobe1", type: "function", function: {name: "svc_probe_fn", arguments: PROBE_ARGS}}]};
}

/**
 * How the template writes one probe call, as text after the conversation before it, and whether it wants the
 * arguments as an object. Templates written for transformers often print `arguments | tojson`, which would
 * double-encode a string (llama.cpp detects the same thing). `forced` skips the choice (a family that knows).
 */
export function probeToolCall(t: Renders, setArgsAsObject: (asObject: boolean) => void, forced?: boolean): {asObject: boolean; rendered: string | null} {
  const attempt = (asObject: boolean): string | undefined => {
    setArgsAsObject(asObject);
    try {
      const before = t.render([QUESTION], {addGenerationPrompt: false, continueFinalMessage: false}).text;
      const after = t.render([QUESTION, probeCall()], {addGenerationPrompt: false, continueFinalMessage: false}).text;
      return after.startsWith(before) ? after.slice(before.length) : after;
    } catch {
      return undefined;
    }
  };
  if (forced !== undefined) {
    const rendered = attempt(forced) ?? null;
    return {asObject: forced, rendered: rendered?.includes("svc_probe_fn") ? rendered : null};
  }
  const asString = attempt(false);
  if (asString?.includes(PROBE_ARGS)) return {asObject: false, rendered: asString};
  const asObject = attempt(true);
  if (asObject?.includes("svc_probe_value")) return {asObject: true, rendered: asObject};
  setArgsAsObject(false);
  return {asObject: false, rendered: asString?.includes("svc_probe_fn") ? asString : null};
}

/**
 * A conversation with every feature a template may meet (system, tools, a call, its result, a reasoning
 * text), rendered only to see whether the Jinja engine can run the template: an error the template raises on
 * purpose does not count (it is about the input), an engine failure does.
 */
export function engineFails(t: Renders): string | null {
  const messages: TemplateMessage[] = [
    {role: "system", content: "svc probe system text"}, QUESTION, {...probeCall(), reasoning_content: "svc probe reasoning"},
    {role: "tool", content: "svc probe result", tool_call_id: "svcprobe1"}, {role: "user", content: "svc probe second question"},
  ];
  const tools = [{type: "function", function: {name: "svc_probe_fn", description: "svc probe tool",
    parameters: {type: "object", properties: {svc_probe_arg: {type: "string", description: "svc probe argument"}}, required: ["svc_probe_arg"]}}}];
  for (const opts of [{tools}, {}] as const) {
    // Arguments as a string and as an object: a template may handle only one of the two.
    const failures: string[] = [];
    for (const asObject of [false, true]) {
      try {
        t.render(messages, {addGenerationPrompt: true, continueFinalMessage: false, ...opts, argumentsAsObject: asObject});
        break;
      } catch (err) {
        if (err instanceof TemplateRenderError && err.raised) break;
        failures.push((err as Error).message);
      }
    }
    if (failures.length === 2) return failures[0]!;
  }
  try {
    t.render([QUESTION], {addGenerationPrompt: true, continueFinalMessage: false});
  } catch (err) {
    if (!(err instanceof TemplateRenderError && err.raised)) return (err as Error).message;
  }
  return null;
}

/** The text that opens an assistant turn (what add_generation_prompt appends), or null when it is not plain. */
export function probeReplyHeader(t: Renders): string | null {
  try {
    const without = t.render([QUESTION], {addGenerationPrompt: false, continueFinalMessage: false}).text;
    const withPrompt = t.render([QUESTION], {addGenerationPrompt: true, continueFinalMessage: false}).text;
    const header = withPrompt.startsWith(without) ? withPrompt.slice(without.length) : "";
    return header.trim() === "" ? null : header;
  } catch {
    return null;
  }
}

/** "ok", or why a plain conversation (and continuing a final assistant message) does not render right. */
export function selfCheck(t: Renders): string {
  const conversation: TemplateMessage[] = [
    {role: "system", content: "svc probe system text"},
    {role: "user", content: "svc probe first question"},
    {role: "assistant", content: "svc probe first answer"},
    {role: "user", content: "svc probe second question"},
  ];
  try {
    const {text} = t.render(conversation, {addGenerationPrompt: true, continueFinalMessage: false});
    const missing = conversation.filter((m) => !text.includes(m.content)).map((m) => m.content);
    if (missing.length > 0) return `probe conversation renders without ${missing.map((s) => `"${s}"`).join(", ")}`;
  } catch (err) {
    return `probe conversation fails to render: ${(err as Error).message}`;
  }
  const partial = "svc probe partial answer";
  try {
    const {text} = t.render([QUESTION, {role: "assistant", content: partial}], {addGenerationPrompt: false, continueFinalMessage: true});
    if (!text.includes("svc probe question")) return "continue-final probe renders without the user message";
    if (!text.endsWith(partial)) return "continue-final probe does not end with the partial assistant text";
  } catch (err) {
    return `continue-final probe fails to render: ${(err as Error).message}`;
  }
  return "ok";
}
