// Turns the dialect's messages and tools into the values a chat template sees. The same builder
// serves the real rendering (wrap = identity) and the marker rendering used to locate client text
// (wrap = Markers.wrap), so both see identical structure and differ only in the wrapped strings.
import type {TemplateMessage} from "./chat-template.ts";
import type {TemplateInputNeeds} from "./families/family.ts";

export interface InputOptions {
  /** The template has no notion of "developer": send those messages as system messages. */
  mapDeveloper: boolean;
  /** The template formats tool-call arguments itself (e.g. `arguments | tojson`): pass an object. */
  argumentsAsObject: boolean;
  /** A call turn without text is passed with `content: null` (template-probes.ts: CallInput). */
  nullCallContent: boolean;
  /** Appended to the final message's content (the continue_final_message sentinel). */
  finalSuffix?: string;
  /** Applied to every client string the template may print. */
  wrap: (text: string) => string;
  /** Applied instead to the strings of tool definitions (client text that is not a cut boundary); `wrap` if absent. */
  wrapTool?: (text: string) => string;
  /**
   * Also wrap names, tool-call arguments and tool definitions. Off for the retry after a marker
   * rendering failed: templates validate those more often than they validate content.
   */
  wrapStructured: boolean;
  /** What the model family's template expects (ids, where earlier reasoning goes). */
  needs: TemplateInputNeeds;
}

type Json = Record<string, unknown>;

/**
 * Developer messages, when the template lacks the role, become system messages: OpenAI defines
 * developer as the system-level instructions of newer models. A run of adjacent system/developer
 * messages that contains a developer message is merged into one system message (parts joined by a
 * blank line), because most templates give only messages[0] the system slot and render or reject
 * any later system message differently. Runs of plain system messages are left as the client sent
 * them. A merged message keeps no `name`.
 */
export function templateMessages(messages: TemplateMessage[], o: InputOptions): Json[] {
  const out: Json[] = [];
  for (let i = 0; i < messages.length; i++) {
    const isLast = i === messages.length - 1;
    let end = i;
    if (o.mapDeveloper && isInstruction(messages[i]!)) {
      while (end + 1 < messages.length && isInstruction(messages[end + 1]!)) end++;
    }
    const run = messages.slice(i, end + 1);
    if (run.length > 1 && run.some((m) => m.role === "developer")) {
      const content = run.map((m) => o.wrap(m.content)).join("\n\n");
      out.push({role: "system", content});
      i = end;
      continue;
    }
    out.push(templateMessage(messages[i]!, o, isLast));
  }
  return out;
}

function isInstruction(m: TemplateMessage): boolean {
  return m.role === "system" || m.role === "developer";
}

function templateMessage(m: TemplateMessage, o: InputOptions, isLast: boolean): Json {
  const wrapS = o.wrapStructured ? o.wrap : (s: string) => s;
  const role = m.role === "developer" && o.mapDeveloper ? "system" : m.role;
  // Calls written into the turn (pipeline/past-calls.ts) follow its text: client pieces wrapped as client text.
  const written = (m.written_calls ?? []).map((p) => (p.client ? o.wrap(p.text) : p.text)).join("");
  const content = o.wrap(m.content) + written + (isLast && o.finalSuffix ? o.finalSuffix : "");
  const out: Json = {role, content: o.nullCallContent && m.tool_calls?.length && content === "" ? null : content};
  if (m.name !== undefined) out.name = wrapS(m.name);
  if (m.reasoning_content !== undefined) placeReasoning(out, o.wrap(m.reasoning_content), content, o.needs);
  // Ids are not wrapped: templates such as Mistral's check their exact length.
  const id = o.needs.toolCallId ?? ((s: string) => s);
  if (m.tool_call_id !== undefined) out.tool_call_id = id(m.tool_call_id);
  if (m.tool_calls !== undefined) {
    out.tool_calls = m.tool_calls.map((c) => ({
      id: id(c.id),
      type: c.type,
      function: {
        name: wrapS(c.function.name),
        arguments: templateArguments(c.function.arguments, o.argumentsAsObject, wrapS),
      },
    }));
  }
  return out;
}

/** An earlier turn's reasoning, where the family's template reads it. */
function placeReasoning(out: Json, reasoning: string, content: string, needs: TemplateInputNeeds): void {
  switch (needs.reasoning) {
    case "reasoning_content":
      out.reasoning_content = reasoning;
      return;
    case "thinking":
      out.thinking = reasoning;
      return;
    case "reasoning":
      out.reasoning = reasoning;
      return;
    case "content-blocks":
      out.content = [{type: "thinking", thinking: reasoning}, ...(content === "" ? [] : [{type: "text", text: content}])];
      return;
    case "thought-blocks":
      out.content = {blocks: [{type: "thoughts", text: reasoning}, {type: "response", text: content}]};
      return;
    case "none":
      return;
  }
}

function templateArguments(args: string, asObject: boolean, wrap: (s: string) => string): unknown {
  if (asObject) {
    const parsed = parseObject(args);
    if (parsed !== undefined) return wrapStrings(parsed, wrap, true);
  }
  return wrap(args);
}

export function parseObject(text: string): Json | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Tool definitions with their client strings wrapped. Values under "type" and "required" stay
 * as sent: templates compare them (`param.type == "string"`, `name in required`), and they are
 * names from a small vocabulary rather than free text.
 */
export function templateTools(tools: unknown[], o: InputOptions): unknown[] {
  return o.wrapStructured ? (wrapStrings(tools, o.wrapTool ?? o.wrap, false) as unknown[]) : tools;
}

const UNWRAPPED_KEYS = new Set(["type", "required"]);

function wrapStrings(value: unknown, wrap: (s: string) => string, wrapKeys: boolean): unknown {
  if (typeof value === "string") return wrap(value);
  if (Array.isArray(value)) return value.map((v) => wrapStrings(v, wrap, wrapKeys));
  if (value === null || typeof value !== "object") return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) {
    out[wrapKeys ? wrap(key) : key] = !wrapKeys && UNWRAPPED_KEYS.has(key) ? v : wrapStrings(v, wrap, wrapKeys);
  }
  return out;
}
