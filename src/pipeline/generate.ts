// The generation pipeline: prompt → fitted budget → region lease → decode → text with stop strings held
// back → GenerationEvents. Every refusal that can be known before decoding (prompt too long, bad token
// ids) is raised by start(), before a stream begins, so it can still be a real HTTP status.

import {ApiError} from "../core/errors.ts";
import {commonPrefix, EngineCancelledError, type CutPlan, type DecodeEnd, type DecodeStats, type Engine, type KeepHook, type RegionLease,
  type ResumeState} from "../engine/index.ts";
import type {FinishReason, GenerationEvent, GenerationRequest, RequestTransport, SessionOutcome, Timings, TokenAlternative,
  TokenLogprob, UsageCounts} from "../core/generation.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import type {SessionPort, SessionTicket} from "../sessions/session-port.ts";
import type {Logger} from "../observability/log.ts";
import {IncrementalDetokenizer, replyDetokenizer, visibleSpecialTokens} from "./detokenizer.ts";
import type {TemplateMessage} from "../core/messages.ts";
import {showMedia, type PromptMedia} from "../core/media.ts";
import {PastCalls} from "./past-calls.ts";
import {buildPrompt, type BuiltPrompt} from "./prompt.ts";
import {preparePictures} from "./pictures.ts";
import {genericToolsPrompt} from "./reply/index.ts";
import {ReplyShaper, type ReplyRecord} from "./reply-shaper.ts";
import {callSyntaxOf, familyOf, planReply, type ReplyPlan} from "./reply-plan.ts";
import {ReplySteering} from "./steering.ts";
import {StopMatcher} from "./stop-strings.ts";
import {compileResponseFormat, type StructuredOutput} from "./response-format.ts";
import {strictEligibility, type Eligibility} from "../syntax/index.ts";

export interface PipelineOptions {
  queueTimeoutMs: number;
  /** 0 = the room left in the region. */
  maxTokensDefault: number;
  /** SVC_SCHEMA_ESCAPE: with tools and an object schema, a free preamble (or a call) may come first. */
  schemaEscape: boolean;
  /** SVC_MAX_TOOL_CALLS: a reply ends when this many of its calls have closed. */
  maxToolCalls: number;
  /** The compiled-schema cache and SVC_GRAMMAR, for the requests' response formats. */
  structured: StructuredOutput;
}

export interface RunSummary {
  regionId: number;
  promptTokens: number;
  finishReason: FinishReason | "cancelled" | "error";
  stats: DecodeStats;
  /** Calls the model wrote whose syntax did not close (the log line reports them). */
  malformedCalls?: number;
  /** The reply was ended by SVC_MAX_TOOL_CALLS after this many calls (the log line reports it). */
  toolCallCap?: number;
  /** The model sampled a stop token before its required answer (the schema's JSON, a call) started; the answer was opened instead. */
  stopOverruled?: boolean;
}

export class GenerationRun implements AsyncIterable<GenerationEvent> {
  private started = false;
  summary: RunSummary;

  constructor(
    private readonly engine: Engine,
    private readonly lease: RegionLease,
    private readonly req: GenerationRequest,
    private readonly transport: RequestTransport,
    readonly promptTokens: number[],
    private readonly maxTokens: number,
    private readonly plan: ReplyPlan,
    private readonly cutPlan: CutPlan,
    private readonly ticket: SessionTicket | null,
    /** Where the next prompt will cut inside this reply when it is sent back (see RegionLease.release). */
    private readonly replyCuts: (reply: ReplyRecord, generated: readonly number[]) => number[] = () => [],
    /** Special tokens the family writes its syntax with, kept in the reply's text. */
    private readonly visibleSpecials: ReadonlySet<number> = new Set(),
    /** The pictures the prompt holds, by id. */
    private readonly media: ReadonlyMap<number, PromptMedia> = new Map(),
  ) {
    this.summary = {regionId: lease.regionId, promptTokens: promptTokens.length, finishReason: "error", stats: lease.stats};
  }

  get startInfo(): RegionLease["start"] {
    return this.lease.start;
  }

  get session(): SessionOutcome | null {
    return this.ticket?.outcome ?? null;
  }

  /** Releases the region if the events were never consumed. */
  close(): void {
    this.releaseLease();
  }

  private released = false;
  /** The reply as the client will send it back, and its tokens; set when the reply finished normally. */
  private finished: {reply: ReplyRecord; generated: number[]} | null = null;

  private releaseLease(): void {
    if (this.released) return;
    this.released = true;
    const ticket = this.ticket;
    const keep = ticket?.keep ?? undefined;
    const replyBoundaries = this.finished ? this.replyCuts(this.finished.reply, this.finished.generated) : [];
    const released = this.lease.release({...(keep ? {keep} : {}), replyBoundaries});
    if (keep && this.finished) ticket?.answered?.(released);
    void released.finally(() => ticket?.end());
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GenerationEvent> {
    if (this.started) throw new Error("a generation run can be consumed once");
    this.started = true;
    const {engine, req, lease} = this;
    const stopIds = new Set([...engine.info.eogTokenIds, ...req.stopTokenIds]);
    const detokenize = replyDetokenizer((tokens, opts) => engine.detokenize(tokens, opts), this.visibleSpecials);
    const steering = this.plan.steering
      ? new ReplySteering(this.plan.steering, {push: textView(detokenize), tokenize: (text) => engine.tokenize(text, {special: true})})
      : null;
    const run = lease.decode({prompt: this.promptTokens, plan: this.cutPlan, sampling: req.sampling, maxTokens: this.maxTokens,
      stopTokenIds: stopIds, signal: this.transport.signal, ...(this.media.size > 0 ? {media: this.media} : {}),
      logprobs: req.logprobs ?? undefined, grammar: (this.plan.grammar ?? steering?.initial) ?? undefined, steering: steering ?? undefined});
    const logprobs: TokenLogprob[] | null = req.logprobs ? [] : null;
    const detok = new IncrementalDetokenizer(detokenize);
    const stops = new StopMatcher(req.stop);
    const reply = new ReplyShaper(this.plan, steering, !this.transport.streamed);
    let end: DecodeEnd | null = null;
    let stoppedBy: string | number | null = null;
    const generated: number[] = [];
    try {
      for (;;) {
        const r = await run.next();
        if (r.done) {
          end = r.value;
          break;
        }
        const item = r.value;
        if (item.kind === "progress") {
          if (req.wantProgress) {
            const total = this.promptTokens.length;
            yield {type: "progress", progress: {total, cache: lease.stats.cachedTokens, processed: item.processed, time_ms: round(item.elapsedMs)}};
          }
          continue;
        }
        if (logprobs && item.score) {
          logprobs.push({...this.alternative(item.token, item.score.logprob), top_logprobs: item.score.top.map((t) => this.alternative(t.token, t.logprob))});
        }
        generated.push(item.token);
        const step = stops.push(detok.push(item.token));
        yield* reply.push(step.emit);
        reply.countToken();
        if (step.matched !== null) {
          stoppedBy = step.matched;
          break;
        }
        if (reply.finished) break;
      }
      if (end?.reason === "cancelled" || (stoppedBy === null && this.transport.signal.aborted)) {
        this.summary.finishReason = "cancelled";
        throw new EngineCancelledError("the client closed the connection; generation was cancelled");
      }
      if (stoppedBy === null && !reply.finished) {
        const tail = stops.push(detok.flush());
        if (tail.matched !== null) stoppedBy = tail.matched;
        yield* reply.push(tail.emit + stops.flush());
      }
      yield* reply.finish();
      this.finished = {reply: reply.record, generated};
    } finally {
      await run.return({reason: "cancelled"});
      this.releaseLease();
    }
    if (stoppedBy === null && end?.reason === "stop_token") stoppedBy = end.token;
    const ended = stoppedBy !== null || reply.finished;
    // A reply whose calls were all written ends for them, as OpenAI reports it; one cut short is "length".
    const finishReason: FinishReason = reply.calls > 0 && ended && reply.callsComplete ? "tool_calls" : ended ? "stop" : "length";
    this.summary.finishReason = finishReason;
    this.summary.malformedCalls = reply.malformed;
    if (steering?.stopOverruled) this.summary.stopOverruled = true;
    if (reply.finished && this.plan.callLimit?.by === "SVC_MAX_TOOL_CALLS") this.summary.toolCallCap = this.plan.callLimit.max;
    const usage = {...usageOf(lease.stats), reasoningTokens: reply.reasoningTokens};
    yield {type: "done", finishReason, stoppedBy, usage, timings: timingsOf(lease.stats), logprobs};
  }

  private alternative(token: number, logprob: number): TokenAlternative {
    return {token: this.engine.detokenize([token], {special: true}), logprob, bytes: [...this.engine.tokenBytes(token)]};
  }
}

/** Replies whose tokens are remembered by text (the oldest are forgotten first): more than the regions hold. */
const REMEMBERED_REPLIES = 512;

export class GenerationPipeline {
  private readonly braceToken: number;
  /** The control tokens the template's family writes its syntax with (detokenizer.ts: replyDetokenizer). */
  private readonly visibleSpecials: ReadonlySet<number>;
  /** Recent replies' tokens by their text (buildPrompt's `replyTokens`). */
  private readonly spelled = new Map<string, readonly number[]>();
  /** The argument text of the calls this server wrote, for writing them back exactly (past-calls.ts). */
  private readonly pastCalls = new PastCalls();

  constructor(
    private readonly engine: Engine,
    private readonly template: ChatTemplate | null,
    private readonly opts: PipelineOptions,
    private readonly logger?: Logger,
    private readonly sessions?: SessionPort | null,
  ) {
    this.braceToken = engine.tokenize("{", {special: false})[0] ?? -1;
    this.visibleSpecials = visibleSpecialTokens(familyOf(template).preserved, (text) => engine.tokenize(text, {special: true}),
      (tokens, opts) => engine.detokenize(tokens, opts));
  }

  /** Renders and checks the prompt, then waits for a region. Throws ApiError (400) or the engine's errors (busy, cancelled). */
  async start(req: GenerationRequest, transport: RequestTransport): Promise<GenerationRun> {
    // First, as when the decoders compiled it: a refused schema is the request's first 400.
    const answerGrammar = compileResponseFormat(req.responseFormat, this.opts.structured);
    const media = await preparePictures(req, this.engine, transport.signal);
    const prompt = this.prompt(req, media);
    const maxTokens = this.fitBudget(prompt.tokens.length, req.maxTokens, req.promptField);
    const plan = planReply(req, {template: this.template, promptText: prompt.text, budget: maxTokens, schemaEscape: this.opts.schemaEscape,
      maxToolCalls: this.opts.maxToolCalls,
      braceToken: this.braceToken, answerGrammar});
    if (answerGrammar) {
      // Loaded before the region is taken, whether it binds from the first token or later (plan.grammar is it
      // or null). A grammar the engine rejects is our compiler's fault, so a 500 that says so.
      await this.engine.prepareGrammar({gbnf: answerGrammar.gbnf, key: answerGrammar.key}).catch((err: Error) => {
        throw new ApiError("server_error", `internal error: the engine rejected the grammar compiled from this schema (${err.message})`);
      });
    }
    const cutPlan = this.engine.planCuts(prompt.tokens.length, prompt);
    const names = transport.session;
    const ticket = names && this.sessions && (names.keep || names.from) ? await this.sessions.begin(names, prompt.tokens, cutPlan, historyEndOf(prompt)) : null;
    let lease: RegionLease;
    try {
      lease = await this.engine.acquire({signal: transport.signal, timeoutMs: this.opts.queueTimeoutMs, prompt: prompt.tokens, plan: cutPlan,
        resume: ticket?.resume ?? null});
    } catch (err) {
      ticket?.end();
      throw err;
    }
    return new GenerationRun(this.engine, lease, req, transport, prompt.tokens, maxTokens, plan, cutPlan, ticket,
      (reply, generated) => this.replyCuts(req, prompt.tokens, reply, generated, media), req.prompt.kind === "chat" ? this.visibleSpecials : new Set(),
      new Map(media.map((m) => [m.id, m])));
  }

  /**
   * Cut positions inside a finished reply, found by rendering the conversation with the reply appended as
   * the client sends it back (reasoning, text, calls): where that rendering cuts is where the next prompt
   * will. Only where the rendering reproduces the generated tokens; a reply of plain text needs none (its
   * text starts where the prompt ended and ends where the reply does).
   */
  private replyCuts(req: GenerationRequest, promptTokens: readonly number[], reply: ReplyRecord, generated: readonly number[],
    media: readonly PromptMedia[]): number[] {
    const spec = req.prompt;
    this.pastCalls.remember(reply, this.rememberTokens(generated));
    if (spec.kind !== "chat" || spec.continueFinalMessage || (reply.reasoning === "" && reply.calls.length === 0)) return [];
    const assistant: TemplateMessage = {role: "assistant", content: reply.content};
    if (reply.reasoning !== "") assistant.reasoning_content = reply.reasoning;
    if (reply.calls.length > 0) assistant.tool_calls = reply.calls.map((c) => ({id: c.id, type: "function", function: {name: c.name, arguments: c.args}}));
    let built: BuiltPrompt;
    try {
      built = this.prompt({...req, prompt: {...spec, messages: [...spec.messages, assistant], addGenerationPrompt: false}}, media);
    } catch {
      return [];
    }
    const matched = commonPrefix(built.tokens, [...promptTokens, ...generated]);
    return built.boundaries.filter((b) => b > promptTokens.length && b <= matched);
  }

  /**
   * The reply's tokens by its text, for buildPrompt (`replyTokens`): only text the tokenizer would read back as
   * text (no special tokens), so a client sending the text cannot get a special token from it. Returns the text
   * (null when not remembered).
   */
  private rememberTokens(generated: readonly number[]): string | null {
    const eog = new Set(this.engine.info.eogTokenIds);
    let end = generated.length;
    while (end > 0 && eog.has(generated[end - 1]!)) end--;
    if (end === 0) return null;
    const tokens = generated.slice(0, end);
    const text = this.engine.detokenize(tokens, {special: true});
    if (text !== this.engine.detokenize(tokens, {special: false})) return null;
    if (this.spelled.size >= REMEMBERED_REPLIES) this.spelled.delete(this.spelled.keys().next().value!);
    this.spelled.set(text, tokens);
    return text;
  }

  private readonly replyTokens = (text: string): readonly number[] | undefined => this.spelled.get(text);

  /**
   * Whether a strict tool's arguments can be enforced on this model: counted and compiled the way the call syntax its
   * replies use writes them (the family's own, or the generic form for a template that cannot show tools), so the
   * decoders' verdict, logged and counted, is the one the steering serves (tool-call-grammars.ts).
   */
  strictEligibility(parameters: unknown): Eligibility {
    return strictEligibility(parameters, callSyntaxOf(this.template).syntax);
  }

  /** A picture counts its positions (asked of the engine), as in the request's `usage`. */
  async countPromptTokens(req: GenerationRequest, signal?: AbortSignal): Promise<number> {
    // A request this pipeline would refuse for its schema is refused when counted too (as before the schema
    // was compiled here rather than in the decoders).
    compileResponseFormat(req.responseFormat, this.opts.structured);
    return this.prompt(req, await preparePictures(req, this.engine, signal)).tokens.length;
  }

  /** The exact text the model would see for this request (POST /apply-template); null for a token prompt. */
  async promptText(req: GenerationRequest): Promise<string | null> {
    compileResponseFormat(req.responseFormat, this.opts.structured);
    const text = this.prompt(req, await preparePictures(req, this.engine)).text;
    // The markers' nonce stays inside the server: a client that knew it could place pictures by hand.
    return text === null ? null : showMedia(text);
  }

  /**
   * Templates with no tool support get the tools, and the generic call form, in a system message; earlier calls
   * the template would not show are written into their turns (past-calls.ts), with or without tools offered.
   */
  private prompt(req: GenerationRequest, media: readonly PromptMedia[]): BuiltPrompt {
    const spec = req.prompt;
    if (spec.kind !== "chat") return buildPrompt(spec, this.engine, this.template, req.promptField, this.replyTokens);
    const {syntax, generic} = callSyntaxOf(this.template);
    let messages = spec.messages;
    const shown = generic ? "none" : this.template?.rendersCalls ?? "none";
    if (shown !== "all") {
      messages = this.pastCalls.writeInto(messages, syntax, generic ? [] : familyOf(this.template).preserved, (m) => shown === "none" || m.content !== "");
    }
    // The tools the template is given, from the decoded tools alone. tool_choice "none": the model is not told
    // about them (and a call it writes anyway is dropped).
    const tools = req.tools;
    if (!tools || tools.choice.kind === "none") {
      return buildPrompt({...spec, messages}, this.engine, this.template, req.promptField, this.replyTokens, undefined, media);
    }
    if (!generic) {
      return buildPrompt({...spec, messages}, this.engine, this.template, req.promptField, this.replyTokens, tools.tools.map((t) => t.templateEntry),
        media);
    }
    // A template without tools: they are written into the system message instead.
    const text = genericToolsPrompt(tools.tools, {parallel: tools.parallel});
    const [first, ...rest] = messages;
    messages = first && first.role === "system"
      ? [{...first, content: `${first.content}\n\n${text}`}, ...rest]
      : [{role: "system" as const, content: text}, ...messages];
    return buildPrompt({...spec, messages}, this.engine, this.template, req.promptField, this.replyTokens, undefined, media);
  }

  /**
   * A prompt must leave room for at least one token; a budget larger than the room runs until the region is full.
   * `field` is the body field the prompt came from, which the refusals name.
   */
  private fitBudget(promptLength: number, requested: number | null, field: string): number {
    const ctx = this.engine.info.contextSize;
    if (promptLength === 0) throw new ApiError("invalid_request", "the prompt is empty: send at least one token", {param: field});
    if (promptLength >= ctx) {
      throw new ApiError("context_length",
        `the prompt has ${promptLength} tokens but a request's context holds ${ctx} positions (SVC_CTX_SIZE), leaving no room for a reply; shorten the prompt`,
        {param: field, overflow: {promptTokens: promptLength, maxPromptTokens: ctx - 1}});
    }
    const room = ctx - promptLength;
    const wanted = requested ?? (this.opts.maxTokensDefault > 0 ? this.opts.maxTokensDefault : room);
    return Math.min(wanted, room);
  }
}

/** The steering's own view of the text, one token at a time (it must see the text before the pipeline does). */
function textView(detokenize: (tokens: readonly number[], context: readonly number[]) => string): (token: number) => string {
  const detok = new IncrementalDetokenizer(detokenize);
  return (token) => detok.push(token);
}

/** Where a chat prompt's last client text ends (its last boundary); undefined for prompts without client texts. */
function historyEndOf(prompt: BuiltPrompt): number | undefined {
  return prompt.boundaries.length > 0 ? Math.max(...prompt.boundaries) : undefined;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function perSecond(n: number, ms: number): number {
  return ms > 0 ? round((n * 1000) / ms) : 0;
}

export function timingsOf(s: DecodeStats): Timings {
  const promptN = s.promptTokens - s.cachedTokens;
  return {
    prompt_n: promptN,
    prompt_ms: round(s.promptMs),
    prompt_per_second: perSecond(promptN, s.promptMs),
    predicted_n: s.predictedTokens,
    predicted_ms: round(s.predictedMs),
    predicted_per_second: perSecond(s.predictedTokens, s.predictedMs),
    cache_n: s.cachedTokens,
    draft_n: s.draftTokens,
    draft_n_accepted: s.draftAccepted,
    ...(s.route ? {route: {replica: s.route.replica, expected_cached: s.route.expectedCached, reason: s.route.reason}} : {}),
  };
}

export function usageOf(s: DecodeStats): UsageCounts {
  return {promptTokens: s.promptTokens, completionTokens: s.predictedTokens, cachedTokens: s.cachedTokens, reasoningTokens: 0};
}
