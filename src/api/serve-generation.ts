// Serving one generation over HTTP, shared by the dialects: the client hang-up becomes an abort signal;
// the region is waited for before any byte is sent (so 400/503 are real statuses); then either the events
// are collected into one body or streamed as SSE. The dialect supplies only the encoding.

import type {FastifyReply, FastifyRequest} from "fastify";
import {ApiError} from "../core/errors.ts";
import type {GenerationEvent, GenerationRequest, RequestTransport, SessionNames, Timings} from "../core/generation.ts";
import type {GenerationRun} from "../pipeline/generate.ts";
import {logRequest} from "../observability/request-log.ts";
import type {ModelHandle, ServerDeps} from "./deps.ts";
import {toApiError} from "./error-body.ts";
import {readSessionHeaders} from "./fields/session-headers.ts";
import {presentedKeys} from "./auth.ts";
import {threadOpening, type AgentThreadSignal} from "../sessions/coding-agent.ts";
import {sendError} from "./server.ts";
import {SseStream} from "./sse.ts";

/** An AbortController that fires when the client goes away before the response is finished. */
export function hangUpSignal(req: FastifyRequest, reply: FastifyReply): AbortController {
  const ac = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) ac.abort();
  };
  reply.raw.on("close", onClose);
  req.raw.on("aborted", () => ac.abort());
  return ac;
}

export interface StreamEncoder {
  /** SSE frames for one event (may be none). */
  frames(event: GenerationEvent): {data: unknown; event?: string}[];
  /** The frame after the last event, e.g. chat's `[DONE]`. */
  terminator?: string;
  errorFrame(err: ApiError): unknown;
  /** Several frames for a failure, when the dialect sends more than one (Responses: `error`, then `response.failed`). */
  errorFrames?(err: ApiError): {data: unknown; event?: string}[];
}

/** Watches a reply as it is produced (the chat route's streaming guard); never holds or changes its frames. */
export interface ReplyWatcher {
  see(ev: GenerationEvent): void;
  /** Streamed: the watcher's own frames go out through `send` whenever they are ready. */
  attach(send: (data: unknown) => void): void;
  /** After the last event, before the terminator or the body: the watcher's last words (it bounds the wait). */
  settle(): Promise<void>;
  /** The request is over, however it ended. */
  close(): void;
}

export interface ServeOptions<Body> {
  route: string;
  /** The request's id and its hang-up signal, from the route. */
  transport: {requestId: string; signal: AbortSignal};
  stream: boolean;
  genRequest: GenerationRequest;
  /** The route honours X-Svc-Keep / X-Svc-From (with SVC_FORK=1). */
  sessions?: boolean;
  /** What the request says about its coding-agent thread (SVC_FORK_MAP=coding-agent names the session from it). */
  agentThread?: () => AgentThreadSignal;
  /** Folds the events of a non-streamed request into its body. */
  collect(events: GenerationEvent[]): Body;
  /** The stream's encoder, made once the request has its region: how long the prompt is and how much the cache served. */
  encoder: (start: {promptTokens: number; cachedTokens: number}) => StreamEncoder;
  watcher?: ReplyWatcher | null;
}

/** `model`: the main model, or a side model that generates (small generation) with a handle of its own. */
export async function serveGeneration<Body>(deps: ServerDeps, model: ModelHandle, req: FastifyRequest, reply: FastifyReply,
  opts: ServeOptions<Body>): Promise<void> {
  const t0 = performance.now();
  const {genRequest} = opts;
  let run: GenerationRun | null = null;
  let timings: Timings | null = null;
  let status = 200;
  let error: string | undefined;
  let stopRunning: (() => void) | null = null;
  const {requestId} = opts.transport;
  // A cancellation is the client's hang-up, unless the server's shutdown grace ran out first: then it is a 503.
  const errorOf = (err: unknown): ApiError => deps.shutdown.aborted && !opts.transport.signal.aborted
    ? new ApiError("shutting_down", "the server is shutting down: this request was still running when its grace (SVC_SHUTDOWN_GRACE_S) ran out, " +
      "and was cancelled; send it again (to this server once it is back, or another)")
    : toApiError(err);
  try {
    const signal = AbortSignal.any([opts.transport.signal, deps.shutdown]);
    const transport: RequestTransport = {...opts.transport, signal, streamed: opts.stream, session: opts.sessions ? sessionNames(deps, req, opts) : null};
    try {
      run = await model.pipeline.start(genRequest, transport);
      deps.stats.recordWait((performance.now() - t0) / 1000, true);
    } catch (err) {
      const kind = errorOf(err).kind;
      if (kind === "engine_busy" || kind === "client_closed") deps.stats.recordWait((performance.now() - t0) / 1000, false);
      throw err;
    }
    stopRunning = deps.stats.startRunning();
    const session = run.session;
    if (session?.from) reply.header("X-Svc-From", session.from);
    if (session?.keep) reply.header("X-Svc-Keep", session.keep);
    if (!opts.stream) {
      const events: GenerationEvent[] = [];
      for await (const ev of run) {
        events.push(ev);
        opts.watcher?.see(ev);
        if (ev.type === "done") timings = ev.timings;
      }
      if (opts.watcher) await opts.watcher.settle();
      reply.send(opts.collect(events));
      return;
    }
    reply.hijack();
    // Headers set on the reply object do not reach a hijacked response by themselves.
    for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) reply.raw.setHeader(k, v as string);
    const sse = new SseStream(reply.raw, deps.config.keepalive * 1000);
    const enc = opts.encoder({promptTokens: run.promptTokens.length, cachedTokens: run.startInfo.reused});
    opts.watcher?.attach((data) => sse.send(data));
    try {
      for await (const ev of run) {
        if (ev.type === "done") timings = ev.timings;
        for (const f of enc.frames(ev)) sse.send(f.data, f.event);
        opts.watcher?.see(ev);
      }
      if (opts.watcher) await opts.watcher.settle();
      if (enc.terminator) sse.send(enc.terminator);
    } catch (err) {
      const apiErr = errorOf(err);
      status = apiErr.status;
      error = apiErr.message;
      if (apiErr.kind !== "client_closed") {
        if (apiErr.status >= 500 && apiErr.kind !== "shutting_down") {
          deps.logger.error("stream failed", {id: requestId, error: (err as Error)?.stack ?? String(err)});
        }
        for (const f of enc.errorFrames?.(apiErr) ?? [{data: enc.errorFrame(apiErr)}]) sse.send(f.data, f.event);
      }
    } finally {
      sse.end();
    }
  } catch (err) {
    const apiErr = errorOf(err);
    status = apiErr.status;
    error = apiErr.message;
    if (apiErr.status >= 500 && apiErr.kind !== "engine_busy" && apiErr.kind !== "shutting_down") {
      deps.logger.error("request failed", {id: requestId, error: (err as Error)?.stack ?? String(err)});
    }
    sendError(reply, apiErr);
  } finally {
    opts.watcher?.close();
    run?.close();
    stopRunning?.();
    const phases = run?.summary.stats.phases ?? null;
    deps.stats.recordFinished({route: opts.route, status, timings, phases,
      structured: genRequest.responseFormat !== null || (genRequest.tools?.tools.some((t) => t.strict && t.enforced) ?? false)});
    const st = model.engine.status();
    logRequest(deps.logger, {
      requestId,
      route: opts.route,
      status,
      stream: opts.stream,
      promptTokens: run?.promptTokens.length ?? 0,
      timings,
      finish: run?.summary.finishReason ?? "error",
      regionId: run?.summary.regionId ?? null,
      cache: run ? cacheNote(run.startInfo) : null,
      busyRegions: st.regions.filter((r) => r.state === "busy").length,
      totalRegions: st.regions.length,
      totalMs: performance.now() - t0,
      phases,
      malformedCalls: run?.summary.malformedCalls ?? 0,
      toolCallCap: run?.summary.toolCallCap,
      stopOverruled: run?.summary.stopOverruled,
      error,
    });
  }
}


/**
 * The request's session names (SVC_FORK=1): the X-Svc-Keep / X-Svc-From headers the client set, else, with the
 * coding-agent mapping, the names the server gives the agent's thread; null when none apply.
 */
function sessionNames<Body>(deps: ServerDeps, req: FastifyRequest, opts: ServeOptions<Body>): SessionNames | null {
  if (!deps.config.fork) return null;
  const names = readSessionHeaders(req.headers);
  if (names.keep || names.from) return names;
  if (!deps.agentMap || !opts.agentThread) return null;
  // Headers the client set win; otherwise the server names the thread itself.
  const keys = presentedKeys(req.headers);
  return deps.agentMap.names(opts.agentThread(), threadOpening(opts.genRequest.prompt), keys[0] ?? null);
}

/** The log line's cache field: what was reused and from where, or why less than possible. */
function cacheNote(start: GenerationRun["startInfo"]): string {
  const from = start.reused > 0 ? `${start.source}:${start.reused}` : "none";
  return start.miss ? `${from},${start.miss}` : from;
}
