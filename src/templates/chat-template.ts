// The model's own chat template (normally tokenizer.chat_template from the GGUF), rendered the way
// transformers renders it, plus what the server needs on top: developer-role mapping, continuing a
// final assistant message, and a split of the prompt into template text and client text so that
// special-token text typed by a client is never parsed as a special token.
import {createHash, randomBytes} from "node:crypto";
import {buildSegments, Markers, type LocatedText, type Segment} from "./segments.ts";
import {templateMessages, templateTools, type InputOptions} from "./template-input.ts";
import {compileTemplate, isReservedName, runTemplate, TemplateRenderError} from "./template-env.ts";

export {TemplateRenderError};

export type Role = "system" | "developer" | "user" | "assistant" | "tool";

export interface TemplateToolCall {
  id: string;
  type: "function";
  function: {name: string; arguments: string};
}

export interface TemplateMessage {
  role: Role;
  /** Already flattened text (the dialect joins text parts). */
  content: string;
  name?: string;
  /** Assistant messages. */
  tool_calls?: TemplateToolCall[];
  /** Tool messages. */
  tool_call_id?: string;
  /** Assistant messages: an earlier turn's reasoning. */
  reasoning_content?: string;
}

export interface RenderOptions {
  addGenerationPrompt: boolean;
  /** Last message must be assistant; output ends right after its content: no end-of-turn, no new turn. */
  continueFinalMessage: boolean;
  /** undefined = template default. */
  enableThinking?: boolean;
  /** chat_template_kwargs: every key becomes a top-level template variable. */
  kwargs?: Record<string, unknown>;
  /** OpenAI-style tool objects, passed as `tools` (absent from the template when undefined). */
  tools?: unknown[];
}

/**
 * A rendered prompt as pieces: template text (special markers parsed when tokenizing) and message
 * content supplied by the client (tokenized WITHOUT special parsing, so a user typing "<|im_end|>"
 * cannot forge a turn). The segment texts concatenate to `text`.
 */
export interface RenderedPrompt {
  text: string;
  segments: Segment[];
}

const ROLES: ReadonlySet<string> = new Set(["system", "developer", "user", "assistant", "tool"]);

/** Variables the server sets; chat_template_kwargs may not replace them (enable_thinking it may). */
const SERVER_VARIABLES = new Set(["messages", "add_generation_prompt", "bos_token", "eos_token", "tools"]);

type Program = ReturnType<typeof compileTemplate>;

export class ChatTemplate {
  readonly sha256: string;
  readonly supportsDeveloperRole: boolean;
  readonly supportsTools: boolean;
  readonly supportsThinking: boolean;
  private checkResult = "ok";
  private argsAsObject = false;

  private constructor(
    private readonly program: Program,
    /** The template text (the pipeline reads the tool-call syntax from it). */
    readonly source: string,
    private readonly bosToken: string,
    private readonly eosToken: string,
    readonly origin: string,
  ) {
    this.sha256 = createHash("sha256").update(source, "utf8").digest("hex");
    this.supportsDeveloperRole = source.includes("developer");
    this.supportsTools = /\btools\b/.test(source);
    this.supportsThinking = /\benable_thinking\b/.test(source);
  }

  /** Throws TemplateRenderError only when the template does not parse; render problems go to `check`. */
  static create(source: string, opts: {bosToken: string; eosToken: string; origin: string}): ChatTemplate {
    const template = new ChatTemplate(compileTemplate(source, opts.origin), source, opts.bosToken,
      opts.eosToken, opts.origin);
    if (source.includes("tool_calls")) template.argsAsObject = template.probeArgumentsAsObject();
    template.checkResult = template.selfCheck();
    template.replyHeader = template.probeReplyHeader();
    return template;
  }

  /**
   * The text that opens an assistant turn (what add_generation_prompt appends, e.g. "<|im_start|>assistant\n"),
   * or null when the template's output does not show it plainly. A reply starts right after it.
   */
  replyHeader: string | null = null;

  private probeReplyHeader(): string | null {
    try {
      const conversation: TemplateMessage[] = [{role: "user", content: "svc probe question"}];
      const without = this.render(conversation, {addGenerationPrompt: false, continueFinalMessage: false}).text;
      const withPrompt = this.render(conversation, {addGenerationPrompt: true, continueFinalMessage: false}).text;
      const header = withPrompt.startsWith(without) ? withPrompt.slice(without.length) : "";
      return header.trim() === "" ? null : header;
    } catch {
      return null;
    }
  }

  /** "ok", or why the template failed the self-check run at creation. */
  get check(): "ok" | string {
    return this.checkResult;
  }

  /**
   * Tool-call arguments are handed to the template as a parsed object rather than the JSON string
   * the client sent. Detected at creation: templates written for transformers often print
   * `arguments | tojson`, which would double-encode a string (llama.cpp detects the same thing).
   */
  get toolArgumentsAsObject(): boolean {
    return this.argsAsObject;
  }

  render(messages: TemplateMessage[], opts: RenderOptions): RenderedPrompt {
    validate(messages, opts);
    const nonce = randomBytes(8).toString("hex");
    // The sentinel goes after the final content so that a template which trims or rewrites content
    // still leaves a fixed point to cut at, and an empty partial is still found.
    const sentinel = opts.continueFinalMessage ? `SVCEND${nonce}X` : undefined;
    const base = {mapDeveloper: !this.supportsDeveloperRole, argumentsAsObject: this.argsAsObject, finalSuffix: sentinel};
    const identity = (s: string) => s;
    const text = this.renderCut({...base, wrap: identity, wrapStructured: true}, messages, opts, sentinel);

    const markers = new Markers(nonce);
    let located: LocatedText | null = null;
    for (const wrapStructured of [true, false]) {
      try {
        located = markers.locate(this.renderCut({...base, wrap: markers.wrap, wrapStructured}, messages, opts, sentinel));
        break;
      } catch {
        // The markers themselves upset the template; retry with fewer, then give up (all client).
      }
    }
    return {text, segments: buildSegments(text, located)};
  }

  private renderCut(input: InputOptions, messages: TemplateMessage[], opts: RenderOptions, sentinel?: string): string {
    const vars: Record<string, unknown> = {
      messages: templateMessages(messages, input),
      add_generation_prompt: opts.addGenerationPrompt,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
    };
    if (opts.tools !== undefined) vars.tools = templateTools(opts.tools, input);
    if (opts.enableThinking !== undefined) vars.enable_thinking = opts.enableThinking;
    // kwargs values are not marked as client text: templates compare them (reasoning_effort ==
    // "high"), and markers would change those branches. They are control values, not content.
    for (const [key, value] of Object.entries(opts.kwargs ?? {})) vars[key] = value;
    const out = runTemplate(this.program, vars);
    if (sentinel === undefined) return out;
    const cut = out.lastIndexOf(sentinel);
    if (cut < 0) {
      throw new TemplateRenderError(
        "continue_final_message: the chat template did not render the final assistant message's content");
    }
    return out.slice(0, cut);
  }

  private probeArgumentsAsObject(): boolean {
    const args = '{"svc_probe_arg":"svc_probe_value"}';
    const probe: TemplateMessage[] = [
      {role: "user", content: "svc probe question"},
      // Nine alphanumerics: Mistral-family templates reject any other tool-call id.
      {role: "assistant", content: "", tool_calls: [{id: "svcprobe1", type: "function", function: {name: "svc_probe_fn", arguments: args}}]},
    ];
    const attempt = (asObject: boolean): string | undefined => {
      const saved = this.argsAsObject;
      this.argsAsObject = asObject;
      try {
        return this.render(probe, {addGenerationPrompt: false, continueFinalMessage: false}).text;
      } catch {
        return undefined;
      } finally {
        this.argsAsObject = saved;
      }
    };
    if (attempt(false)?.includes(args)) return false;
    return attempt(true)?.includes("svc_probe_value") ?? false;
  }

  private selfCheck(): string {
    const conversation: TemplateMessage[] = [
      {role: "system", content: "svc probe system text"},
      {role: "user", content: "svc probe first question"},
      {role: "assistant", content: "svc probe first answer"},
      {role: "user", content: "svc probe second question"},
    ];
    try {
      const {text} = this.render(conversation, {addGenerationPrompt: true, continueFinalMessage: false});
      const missing = conversation.filter((m) => !text.includes(m.content)).map((m) => m.content);
      if (missing.length > 0) return `probe conversation renders without ${missing.map((t) => `"${t}"`).join(", ")}`;
    } catch (err) {
      return `probe conversation fails to render: ${(err as Error).message}`;
    }
    const partial = "svc probe partial answer";
    try {
      const {text} = this.render([{role: "user", content: "svc probe question"}, {role: "assistant", content: partial}],
        {addGenerationPrompt: false, continueFinalMessage: true});
      if (!text.includes("svc probe question")) return "continue-final probe renders without the user message";
      if (!text.endsWith(partial)) return "continue-final probe does not end with the partial assistant text";
    } catch (err) {
      return `continue-final probe fails to render: ${(err as Error).message}`;
    }
    return "ok";
  }
}

/** Shape errors are the client's; messages name the request field. */
function validate(messages: TemplateMessage[], opts: RenderOptions): void {
  const fail = (message: string): never => {
    throw new TemplateRenderError(message);
  };
  if (!Array.isArray(messages) || messages.length === 0) fail("messages: must contain at least one message");
  messages.forEach((m, i) => {
    if (!ROLES.has(m.role)) fail(`messages[${i}].role: must be one of system, developer, user, assistant, tool`);
    if (typeof m.content !== "string") fail(`messages[${i}].content: must be text`);
    if (m.tool_calls !== undefined) {
      if (m.role !== "assistant") fail(`messages[${i}].tool_calls: only assistant messages carry tool calls`);
      m.tool_calls.forEach((c, j) => {
        if (typeof c?.function?.name !== "string" || typeof c.function.arguments !== "string") {
          fail(`messages[${i}].tool_calls[${j}].function: needs a string name and string arguments`);
        }
      });
    }
  });
  if (opts.continueFinalMessage) {
    if (opts.addGenerationPrompt) fail("continue_final_message and add_generation_prompt cannot both be true");
    if (messages[messages.length - 1]!.role !== "assistant") {
      fail(`messages[${messages.length - 1}].role: continue_final_message needs the last message to be assistant`);
    }
  }
  for (const key of Object.keys(opts.kwargs ?? {})) {
    // The server's own variables carry the tracked client text; letting kwargs replace them would
    // put client text into the prompt unmarked.
    if (SERVER_VARIABLES.has(key) || isReservedName(key)) fail(`chat_template_kwargs.${key}: reserved, cannot be set`);
  }
}
