// Small renders run once when a template is loaded, to learn what its text does not say plainly: whether it
// expects tool-call arguments as an object, how it writes a call (family detection reads it), what opens an
// assistant turn, whether a plain conversation survives it (the self-check /health reports), and whether it can
// serve a chat at all (the start probe: a template that fails it stops the start).

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

/** How a template wants a call turn handed to it. */
export interface CallInput {
  /** Tool-call arguments as a parsed object rather than the client's JSON string. */
  asObject: boolean;
  /** A call turn without text gets `content: null` (templates that test `content is none`, such as Granite 3.3
   * and the DeepSeek R1 distills, render calls only then); otherwise "" as llama.cpp's server sends it. */
  nullContent: boolean;
}

/**
 * How the template writes one probe call, as text after the conversation before it, and the input that makes
 * it write the call at all. Templates written for transformers often print `arguments | tojson`, which would
 * double-encode a string (llama.cpp detects the same thing). `forcedObject` fixes the arguments' form (a family
 * that knows).
 */
export function probeToolCall(t: Renders, set: (input: CallInput) => void, forcedObject?: boolean): CallInput & {rendered: string | null} {
  const attempt = (input: CallInput): string | undefined => {
    set(input);
    try {
      const before = t.render([QUESTION], {addGenerationPrompt: false, continueFinalMessage: false}).text;
      const after = t.render([QUESTION, probeCall()], {addGenerationPrompt: false, continueFinalMessage: false}).text;
      return after.startsWith(before) ? after.slice(before.length) : after;
    } catch {
      return undefined;
    }
  };
  const forms = forcedObject === undefined ? [false, true] : [forcedObject];
  let fallback: (CallInput & {rendered: string | null}) | null = null;
  for (const nullContent of [false, true]) {
    for (const asObject of forms) {
      const rendered = attempt({asObject, nullContent});
      // The call shows when its name or its argument does (some templates print only the arguments).
      if (rendered === undefined || !(rendered.includes("svc_probe_fn") || rendered.includes("svc_probe_value"))) continue;
      // A string the template printed as is, or an object it printed itself: either way the value shows.
      if (rendered.includes(asObject ? "svc_probe_value" : PROBE_ARGS)) {
        set({asObject, nullContent});
        return {asObject, nullContent, rendered};
      }
      fallback ??= {asObject, nullContent, rendered};
    }
  }
  const chosen = fallback ?? {asObject: forcedObject ?? false, nullContent: false, rendered: null};
  set(chosen);
  return chosen;
}

/**
 * Whether the engine fails on tools whose parameter schema has an `items` key: the JS engine reads `schema.items()`
 * as that key, not the dict method (GigaChat's templates walk schemas that way). Only asked of an engine that ran
 * the probe conversation.
 */
export function failsOnItems(t: Renders): boolean {
  const tools = [{type: "function", function: {name: "svc_probe_fn", description: "svc probe tool", parameters: {type: "object",
    properties: {svc_probe_list: {type: "array", description: "svc probe list", items: {type: "string", description: "svc probe item"}}}}}}];
  try {
    t.render([QUESTION], {addGenerationPrompt: true, continueFinalMessage: false, tools});
    return false;
  } catch (err) {
    return !(err instanceof TemplateRenderError && err.raised);
  }
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

/**
 * Whether the template shows a call in a turn that also has text (the input set by probeToolCall). Some show a
 * turn's calls only when it has no text (the DeepSeek R1 distills test `content is none`).
 */
export function probeCallWithText(t: Renders): boolean {
  try {
    const {text} = t.render([QUESTION, {...probeCall(), content: "svc probe text"}], {addGenerationPrompt: false, continueFinalMessage: false});
    return text.includes("svc_probe_fn") || text.includes("svc_probe_value");
  } catch {
    return false;
  }
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

/** The start probe's conversations, in order: one user message; then, for a template that insists on one, a system
 * message before it. Every chat template can render one of them (all 70 that llama.cpp ships do). */
const START_PROBES: TemplateMessage[][] = [[QUESTION], [{role: "system", content: "svc probe system text"}, QUESTION]];

/** A probe conversation as the start's message shows it: `[user "svc probe question"]`. */
function sent(messages: TemplateMessage[]): string {
  return `[${messages.map((m) => `${m.role} ${JSON.stringify(m.content)}`).join(", ")}] with add_generation_prompt`;
}

/**
 * The least a chat template must do to serve the chat routes: render a user message (alone, or after a system
 * message) with the assistant turn opened, the user's text in the prompt. null when it does; otherwise what each
 * probe conversation was and how it failed. Unlike the self-check (selfCheck), a failure here stops the start.
 */
export function startProbe(t: Renders): string | null {
  const failures: string[] = [];
  for (const messages of START_PROBES) {
    try {
      const {text} = t.render(messages, {addGenerationPrompt: true, continueFinalMessage: false});
      if (text.includes(QUESTION.content)) return null;
      failures.push(`${sent(messages)}, and the prompt it made lacks the user's text`);
    } catch (err) {
      failures.push(`${sent(messages)}, and the template failed: ${(err as Error).message}`);
    }
  }
  return `the start probe sent ${failures.join("; then ")}`;
}
