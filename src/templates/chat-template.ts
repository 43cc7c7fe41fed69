// The model's own chat template (normally tokenizer.chat_template from the GGUF), rendered the way
// transformers renders it, plus what the server needs on top: developer-role mapping, continuing a
// final assistant message, and a split of the prompt into template text and client text so that
// special-token text typed by a client is never parsed as a special token.
import {createHash, randomBytes} from "node:crypto";
import {detectFamily, generic, type ModelFamily} from "./families/index.ts";
import {jsRenderer, nativeRenderer, parseErrorLine, type NativeJinjaFactory, type TemplateRenderer} from "./renderer.ts";
import {buildSegments, Markers, type LocatedText, type Segment} from "./segments.ts";
import {templateMessages, templateTools, type InputOptions} from "./template-input.ts";
import {isReservedName, TemplateRenderError} from "./template-env.ts";
import type {Role, TemplateMessage, TemplateToolCall, WrittenPiece} from "../core/messages.ts";
import {deriveCallSyntax, type Derivation} from "./derive-syntax.ts";
import {derivedFamily} from "./families/derived.ts";
import {engineFails, failsOnItems, probeCallWithText, probeReplyHeader, probeToolCall, selfCheck, startProbe, type CallInput,
  type Renders} from "./template-probes.ts";

export {TemplateRenderError};
export type {NativeJinjaFactory};

export type {Role, TemplateMessage, TemplateToolCall, WrittenPiece};

export interface RenderOptions {
  addGenerationPrompt: boolean;
  /** Last message must be assistant; output ends right after its content: no end-of-turn, no new turn. */
  continueFinalMessage: boolean;
  /** undefined = template default. */
  enableThinking?: boolean;
  /** Passed as `reasoning_effort` to templates that read it (gpt-oss: low, medium, high). */
  reasoningEffort?: string;
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

export interface TemplateOptions {
  bosToken: string;
  eosToken: string;
  /** Where the text came from (gguf:tokenizer.chat_template, a file path), for messages. */
  origin: string;
  /** llama.cpp's Jinja engine, for templates the JS engine cannot run (renderer.ts); absent: JS only. */
  native?: NativeJinjaFactory;
  /** GGUF metadata family detection may use. */
  metadata?: {architecture: string | null; modelName: string | null};
}

export class ChatTemplate {
  readonly sha256: string;
  readonly supportsDeveloperRole: boolean;
  /** The template shows tools (it reads `tools`, or its family's tools text). */
  supportsTools: boolean;
  /** The template has an enable_thinking switch (it is passed as true unless the request turns it off). */
  readonly supportsThinking: boolean;
  private checkResult = "ok";
  private startResult: string | null = null;
  private callInput: CallInput = {asObject: false, nullContent: false};
  /** Detected at creation from the template text, how it renders a call, and the GGUF metadata. */
  family: ModelFamily = generic;
  /** For a template no family file knows: the call syntax read from its renders, or why none could be. */
  derivation: Derivation | null = null;
  /** The text that opens an assistant turn (what add_generation_prompt appends), or null when not plain. */
  replyHeader: string | null = null;
  /** Which earlier turns' tool calls the template shows: "all", only turns without text, or "none" (Granite 3.3,
   * templates without tools). The server writes the others itself (pipeline/past-calls.ts). */
  rendersCalls: "all" | "without-text" | "none" = "none";

  private constructor(
    private renderer: TemplateRenderer,
    /** The template text (the family is detected from it). */
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

  /**
   * Throws TemplateRenderError only when the template does not parse on any engine (the message names the origin
   * and, where it can be found, the line); render problems go to `check`.
   */
  static create(source: string, opts: TemplateOptions): ChatTemplate {
    const template = new ChatTemplate(pickRenderer(source, opts), source, opts.bosToken, opts.eosToken, opts.origin);
    const set = (input: CallInput) => (template.callInput = input);
    let probe = probeToolCall(template, set);
    template.family = detectFamily({source, architecture: opts.metadata?.architecture ?? null, modelName: opts.metadata?.modelName ?? null,
      renderedCall: probe.rendered});
    if (template.family.input.toolsText) template.supportsTools = true;
    // No family file knows it, yet it writes calls: read its syntax from how it renders them.
    if (template.family === generic && template.supportsTools && probe.rendered !== null) {
      template.derivation = template.deriveSyntax();
      if (template.derivation.syntax) template.family = derivedFamily(template.derivation.syntax, template.derivation.parallel);
    }
    const wanted = template.family.input.argumentsAsObject;
    if (wanted !== undefined && wanted !== probe.asObject) probe = probeToolCall(template, set, wanted);
    template.rendersCalls = probe.rendered === null ? "none" : probeCallWithText(template) ? "all" : "without-text";
    template.checkResult = selfCheck(template);
    template.startResult = startProbe(template);
    template.replyHeader = probeReplyHeader(template);
    return template;
  }

  /** Which Jinja engine runs this template (renderer.ts). */
  get engine(): "js" | "native" {
    return this.renderer.engine;
  }

  /** "ok", or why the template failed the self-check run at creation. */
  get check(): "ok" | string {
    return this.checkResult;
  }

  /** The call syntax the template's own renders show (derive-syntax.ts), whatever family file matches it. */
  deriveSyntax(): Derivation {
    return deriveCallSyntax(this);
  }

  /** null, or why the template cannot serve a chat at all (the start probe, template-probes.ts: what it sent and the
   * error); the start stops then (load-models.ts). */
  get startProblem(): string | null {
    return this.startResult;
  }

  /** Tool-call arguments reach the template as a parsed object rather than the client's JSON string. */
  get toolArgumentsAsObject(): boolean {
    return this.callInput.asObject;
  }

  render(messages: TemplateMessage[], opts: RenderOptions): RenderedPrompt {
    validate(messages, opts);
    const nonce = randomBytes(8).toString("hex");
    // The sentinel goes after the final content so that a template which trims or rewrites content
    // still leaves a fixed point to cut at, and an empty partial is still found.
    const sentinel = opts.continueFinalMessage ? `SVCEND${nonce}X` : undefined;
    const base = {mapDeveloper: !this.supportsDeveloperRole, argumentsAsObject: this.callInput.asObject, nullCallContent: this.callInput.nullContent,
      finalSuffix: sentinel, needs: this.family.input};
    const identity = (s: string) => s;
    const text = this.renderCut({...base, wrap: identity, wrapStructured: true}, messages, opts, sentinel);

    const markers = new Markers(nonce);
    let located: LocatedText | null = null;
    for (const wrapStructured of [true, false]) {
      try {
        located = markers.locate(this.renderCut({...base, wrap: markers.wrap, wrapTool: markers.wrapTool, wrapStructured}, messages, opts, sentinel));
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
    if (opts.tools !== undefined && input.needs.toolsText) Object.assign(vars, input.needs.toolsText(vars.tools as unknown[]));
    // Thinking is on unless the request turns it off, as llama.cpp's server does: some templates (DeepSeek V3.1,
    // QwQ as llama.cpp ships it) read an unset switch as off.
    const thinking = opts.enableThinking ?? (this.supportsThinking ? true : undefined);
    if (thinking !== undefined) vars.enable_thinking = thinking;
    const effort = templateEffort(opts.reasoningEffort);
    if (effort !== undefined && this.source.includes("reasoning_effort")) vars.reasoning_effort = effort;
    // kwargs values are not marked as client text: templates compare them (reasoning_effort ==
    // "high"), and markers would change those branches. They are control values, not content.
    for (const [key, value] of Object.entries(opts.kwargs ?? {})) vars[key] = value;
    const out = this.renderer.render(vars);
    if (sentinel === undefined) return out;
    const cut = out.lastIndexOf(sentinel);
    if (cut < 0) {
      throw new TemplateRenderError(
        "continue_final_message: the chat template did not render the final assistant message's content");
    }
    return out.slice(0, cut);
  }
}

/** Effort levels as templates name them (gpt-oss knows low, medium, high); "none" turns thinking off instead. */
function templateEffort(effort: string | undefined): string | undefined {
  if (effort === undefined || effort === "none") return undefined;
  return effort === "minimal" ? "low" : effort === "xhigh" ? "high" : effort;
}

/**
 * The JS engine unless it cannot run the template and llama.cpp's can: it fails to parse it, or fails (not by the
 * template's own raise_exception) on a conversation with every feature.
 */
function pickRenderer(source: string, opts: TemplateOptions): TemplateRenderer {
  let js: TemplateRenderer | null = null;
  let jsError: TemplateRenderError | null = null;
  try {
    js = jsRenderer(source, opts.origin);
  } catch (err) {
    if (!(err instanceof TemplateRenderError)) throw err;
    const line = parseErrorLine(source, opts.origin);
    jsError = new TemplateRenderError(line === null ? err.message : `${err.message} (line ${line})`,
      {parse: {line, js: err.parse?.js ?? err.message, native: null}});
  }
  if (js !== null && (!opts.native || engineFails(rendersWith(js, opts)) === null)) {
    if (!opts.native || !failsOnItems(rendersWith(js, opts))) return js;
    const other = nativeOrNull(opts.native, source, opts.origin);
    return other !== null && engineFails(rendersWith(other, opts)) === null && !failsOnItems(rendersWith(other, opts)) ? other : js;
  }
  if (!opts.native) throw jsError!;
  let native: TemplateRenderer;
  try {
    native = nativeRenderer(opts.native, source, opts.origin);
  } catch (err) {
    if (js !== null) return js;
    const native = (err as Error).message.replace(/^chat template from .* failed to parse \(llama\.cpp Jinja\): /, "");
    throw new TemplateRenderError(`${jsError!.message}; ${(err as Error).message}`, {parse: {...jsError!.parse!, native}});
  }
  if (js !== null && engineFails(rendersWith(native, opts)) !== null) return js;
  return native;
}

function nativeOrNull(factory: NativeJinjaFactory, source: string, origin: string): TemplateRenderer | null {
  try {
    return nativeRenderer(factory, source, origin);
  } catch {
    return null;
  }
}

/** A bare renderer as the probes see it (no family yet: defaults for the input). */
function rendersWith(renderer: TemplateRenderer, opts: TemplateOptions): Renders {
  return {
    render: (messages, o) => {
      validate(messages, o);
      const input: InputOptions = {mapDeveloper: false, argumentsAsObject: o.argumentsAsObject === true, nullCallContent: false, wrap: (s) => s,
        wrapStructured: false, needs: generic.input};
      const vars: Record<string, unknown> = {messages: templateMessages(messages, input), add_generation_prompt: o.addGenerationPrompt,
        bos_token: opts.bosToken, eos_token: opts.eosToken};
      if (o.tools !== undefined) vars.tools = o.tools;
      return {text: renderer.render(vars)};
    },
  };
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
