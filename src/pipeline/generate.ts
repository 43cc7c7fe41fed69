// The generation pipeline: prompt → fitted budget → region lease → decode → text with stop strings held
// back → GenerationEvents. Every refusal that can be known before decoding (prompt too long, bad token
// ids) is raised by start(), before a stream begins, so it can still be a real HTTP status.

import {ApiError} from "../core/errors.ts";
import type {FinishReason, GenerationEvent, GenerationRequest, Timings, TokenAlternative, TokenLogprob, UsageCounts} from "../core/generation.ts";
import type {DecodeEnd, DecodeStats, Engine, RegionLease} from "../engine/engine.ts";
import type {ChatTemplate} from "../templates/chat-template.ts";
import {IncrementalDetokenizer} from "./detokenizer.ts";
import {buildPrompt} from "./prompt.ts";
import {StopMatcher} from "./stop-strings.ts";

export interface PipelineOptions {
  queueTimeoutMs: number;
  /** 0 = the room left in the region. */
  maxTokensDefault: number;
}

export interface RunSummary {
  regionId: number;
  promptTokens: number;
  finishReason: FinishReason | "cancelled" | "error";
  stats: DecodeStats;
}

export class GenerationRun implements AsyncIterable<GenerationEvent> {
  private started = false;
  summary: RunSummary;

  constructor(
    private readonly engine: Engine,
    private readonly lease: RegionLease,
    private readonly req: GenerationRequest,
    readonly promptTokens: number[],
    private readonly maxTokens: number,
  ) {
    this.summary = {regionId: lease.regionId, promptTokens: promptTokens.length, finishReason: "error", stats: lease.stats};
  }

  /** Releases the region if the events were never consumed. */
  close(): void {
    this.lease.release();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<GenerationEvent> {
    if (this.started) throw new Error("a generation run can be consumed once");
    this.started = true;
    const {engine, req, lease} = this;
    const stopIds = new Set([...engine.info.eogTokenIds, ...req.stopTokenIds]);
    const run = lease.decode({prompt: this.promptTokens, sampling: req.sampling, maxTokens: this.maxTokens, stopTokenIds: stopIds, signal: req.signal,
      logprobs: req.logprobs ?? undefined, grammar: req.grammar ?? undefined});
    const logprobs: TokenLogprob[] | null = req.logprobs ? [] : null;
    const detok = new IncrementalDetokenizer((tokens, context) => engine.detokenize(tokens, {special: false, context}));
    const stops = new StopMatcher(req.stop);
    let end: DecodeEnd | null = null;
    let stoppedBy: string | number | null = null;
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
        const step = stops.push(detok.push(item.token));
        if (step.emit) yield {type: "text", text: step.emit};
        if (step.matched !== null) {
          stoppedBy = step.matched;
          break;
        }
      }
      if (end?.reason === "cancelled" || (stoppedBy === null && req.signal.aborted)) {
        this.summary.finishReason = "cancelled";
        throw new ApiError("client_closed", "the client closed the connection; generation was cancelled");
      }
      if (stoppedBy === null) {
        const tail = stops.push(detok.flush());
        if (tail.matched !== null) stoppedBy = tail.matched;
        const rest = tail.emit + stops.flush();
        if (rest) yield {type: "text", text: rest};
      }
    } finally {
      await run.return({reason: "cancelled"});
      lease.release();
    }
    if (stoppedBy === null && end?.reason === "stop_token") stoppedBy = end.token;
    const finishReason: FinishReason = stoppedBy !== null ? "stop" : "length";
    this.summary.finishReason = finishReason;
    yield {type: "done", finishReason, stoppedBy, usage: usageOf(lease.stats), timings: timingsOf(lease.stats), logprobs};
  }

  private alternative(token: number, logprob: number): TokenAlternative {
    return {token: this.engine.detokenize([token], {special: true}), logprob, bytes: [...this.engine.tokenBytes(token)]};
  }
}

export class GenerationPipeline {
  constructor(
    private readonly engine: Engine,
    private readonly template: ChatTemplate | null,
    private readonly opts: PipelineOptions,
  ) {}

  /** Renders and checks the prompt, then waits for a region. Throws ApiError (400, 499, 503). */
  async start(req: GenerationRequest): Promise<GenerationRun> {
    const prompt = buildPrompt(req.prompt, this.engine, this.template);
    const maxTokens = this.fitBudget(prompt.tokens.length, req.maxTokens);
    if (req.grammar) {
      // Compiled once per distinct schema; a grammar the engine rejects is our compiler's fault, so a 500 that says so.
      await this.engine.prepareGrammar(req.grammar).catch((err: Error) => {
        throw new ApiError("server_error", `internal error: the engine rejected the grammar compiled from this schema (${err.message})`);
      });
    }
    const lease = await this.engine.acquire({signal: req.signal, timeoutMs: this.opts.queueTimeoutMs, prompt: prompt.tokens});
    return new GenerationRun(this.engine, lease, req, prompt.tokens, maxTokens);
  }

  countPromptTokens(req: GenerationRequest): number {
    return buildPrompt(req.prompt, this.engine, this.template).tokens.length;
  }

  /** A prompt must leave room for at least one token; a budget larger than the room runs until the region is full. */
  private fitBudget(promptLength: number, requested: number | null): number {
    const ctx = this.engine.info.contextSize;
    if (promptLength === 0) throw new ApiError("invalid_request", "the prompt is empty: send at least one token", {param: "prompt"});
    if (promptLength >= ctx) {
      throw new ApiError("context_length",
        `the prompt has ${promptLength} tokens but a request's context holds ${ctx} positions (SVC_CTX_SIZE), leaving no room for a reply; shorten the prompt`,
        {param: "messages"});
    }
    const room = ctx - promptLength;
    const wanted = requested ?? (this.opts.maxTokensDefault > 0 ? this.opts.maxTokensDefault : room);
    return Math.min(wanted, room);
  }
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
    draft_n: 0,
    draft_n_accepted: 0,
  };
}

export function usageOf(s: DecodeStats): UsageCounts {
  return {promptTokens: s.promptTokens, completionTokens: s.predictedTokens, cachedTokens: s.cachedTokens, reasoningTokens: 0};
}
