// One reply decoded on a remote replica's slot, as DecodeRun items. The prompt goes as token ids; the grammar
// as our compiled GBNF. A replica cannot rebind a grammar in the middle of a request, so when the steering
// changes the grammar (or replaces a token) the remote request is ended at that token and continued as a new
// one: the prompt plus the reply so far, under the next grammar; the replica's prompt cache makes that cheap.
// Tokens a new grammar must accept first (the `{` a JSON value started with) are regenerated under it and
// checked against what was already sent, byte for byte: the reply never says something the client did not get.

import {EngineUnavailableError} from "../errors.ts";
import type {DecodeEnd, DecodeItem, DecodeJob, DecodeRun, DecodeStats, GrammarRef, TokenScore} from "../engine.ts";
import {replicaApi, ReplicaUnreachableError, type CompletionChunk} from "./llama-server-api.ts";
import {CLOSING_CANDIDATES, type StepCloser} from "./remote-closing.ts";
import {heldBackBytes, type TokenByteIndex} from "./token-gaps.ts";

/** The remote generation diverged from tokens already sent (only possible where a regenerated prefix could differ). */
export class RemoteDivergedError extends Error {
  override readonly name = "RemoteDivergedError";
}

export interface RemoteSlotRef {
  url: string;
  slot: number;
}

export interface RemoteDecodeDeps {
  bytes: TokenByteIndex;
  tokenBytes(token: number): Uint8Array;
  isSpecial(token: number): boolean;
  /** The slot the next remote request goes to (it can change once, on failover). */
  target(): RemoteSlotRef;
  /** The replica did not answer and no token was sent yet: take it out and move to another slot (throws when none). */
  failover(err: ReplicaUnreachableError): Promise<void>;
  /** The replica broke off in the middle of a reply: take it out. */
  lost(err: ReplicaUnreachableError): void;
  /** What the slot holds after a remote request: its prompt and the tokens it generated. */
  held(tokens: readonly number[]): void;
  /** A /completion body's `prompt` for these tokens: the ids, or text and pictures when they hold pictures (remote-media.ts). */
  prompt(tokens: readonly number[], media: DecodeJob["media"]): unknown;
  /** svc's copy of a grammar's state, to close JSON as the budget ends (`budget`: tokens left for this binding). */
  closer(grammar: GrammarRef, budget: number): Promise<StepCloser>;
}

/** A continuation: where the next remote request starts, under which grammar, and what it must regenerate first. */
interface Segment {
  /** Reply tokens that go into the next request's prompt. */
  basis: number;
  grammar: GrammarRef | null;
  /** Bytes the next request must write before anything new (already sent to the client). */
  swallow: Uint8Array;
  /** Tokens a fresh grammar binding accepts first (the same as `swallow`, for svc's own copy of the grammar state). */
  accept: readonly number[];
  /** One token per request, chosen by svc (the JSON is being closed as the budget ends: remote-closing.ts). */
  stepwise: boolean;
}

function samplingBody(job: DecodeJob): Record<string, unknown> {
  const s = job.sampling;
  return {temperature: s.temperature, top_k: s.topK, top_p: s.topP, min_p: s.minP, seed: s.seed, presence_penalty: s.presencePenalty,
    frequency_penalty: s.frequencyPenalty, repeat_penalty: s.repeatPenalty, repeat_last_n: s.repeatLastN,
    n_probs: job.logprobs ? Math.max(1, job.logprobs.top) : 0};
}

function scoreOf(chunk: CompletionChunk, token: number, top: number): TokenScore | undefined {
  const p = chunk.completion_probabilities?.[0];
  if (!p || p.id !== token) return undefined;
  // llama-server writes log(0) as null.
  return {logprob: p.logprob ?? -Infinity, top: p.top_logprobs.slice(0, top).map((t) => ({token: t.id, logprob: t.logprob ?? -Infinity}))};
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > bytes.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

export async function* remoteDecode(job: DecodeJob, deps: RemoteDecodeDeps, stats: DecodeStats): DecodeRun {
  const started = performance.now();
  const generated: number[] = [];
  let firstTokenAt = 0;
  let segment: Segment = {basis: 0, grammar: job.grammar ?? null, swallow: new Uint8Array(0), accept: [], stepwise: false};
  /** The grammar binding's state in svc; kept across the one-token steps, made anew when the steering binds another grammar. */
  let closer: StepCloser | null = null;
  let first = true;
  stats.promptTokens = job.prompt.length;
  const finish = (end: DecodeEnd): DecodeEnd => {
    if (firstTokenAt === 0) stats.promptMs = performance.now() - started;
    else stats.predictedMs = performance.now() - firstTokenAt;
    stats.predictedTokens = generated.length;
    return end;
  };
  for (;;) {
    if (job.signal.aborted) return finish({reason: "cancelled"});
    if (generated.length >= job.maxTokens) return finish({reason: "length"});
    const prompt = [...job.prompt, ...generated.slice(0, segment.basis)];
    const remote: number[] = [];
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    job.signal.addEventListener("abort", onAbort, {once: true});
    const target = deps.target();
    let next: Segment | null = null;
    let swallow = segment.swallow;
    let lastPredicted = 0;
    try {
      if (segment.grammar && !segment.stepwise) {
        closer = await deps.closer(segment.grammar, job.maxTokens - generated.length + segment.accept.length);
        for (const t of segment.accept) closer.accept(t);
      } else if (!segment.grammar) {
        closer = null;
      }
      const body = {prompt: deps.prompt(prompt, job.media), n_predict: job.maxTokens - segment.basis, cache_prompt: true, id_slot: target.slot,
        return_tokens: true,
        return_progress: first, ...samplingBody(job), ...(segment.grammar ? {grammar: segment.grammar.gbnf} : {})};
      const source = segment.stepwise && closer ? closingStep(target, {...body, n_predict: 1, n_probs: CLOSING_CANDIDATES, grammar: undefined}, closer,
        controller.signal) : replicaApi.complete(target.url, body, controller.signal);
      chunks: for await (const chunk of source) {
        if (chunk.prompt_progress) {
          const p = chunk.prompt_progress;
          if (first && firstTokenAt === 0) {
            if (stats.cachedTokens === 0 && p.cache > 0) stats.cachedTokens = Math.min(p.cache, job.prompt.length);
            yield {kind: "progress", processed: Math.min(p.processed, job.prompt.length), elapsedMs: performance.now() - started} satisfies DecodeItem;
          }
          continue;
        }
        // An end-of-generation token was streamed before this chunk (and returned on, below): what ends here is the budget
        // (n_predict) or the slot's context.
        if (chunk.stop) return finish({reason: "length"});
        const streamed = chunk.tokens?.at(-1);
        if (streamed === undefined) continue;
        const predicted = chunk.tokens_predicted ?? lastPredicted + 1;
        const held = predicted - lastPredicted - 1;
        lastPredicted = predicted;
        const incoming = held > 0 ? [...recoverHeld(chunk.content, streamed, held, deps), streamed] : [streamed];
        for (const token of incoming) {
          remote.push(token);
          if (firstTokenAt === 0) {
            firstTokenAt = performance.now();
            stats.promptMs = firstTokenAt - started;
            yield {kind: "progress", processed: job.prompt.length, elapsedMs: stats.promptMs};
          }
          let tokens = [token];
          if (swallow.length > 0) {
            const b = deps.tokenBytes(token);
            if (startsWith(swallow, b)) {
              swallow = swallow.subarray(b.length);
              continue;
            }
            if (!startsWith(b, swallow)) throw new RemoteDivergedError("the replica's continuation under the new grammar differs from the reply already sent");
            // The token runs past what was sent: only its new bytes are this reply's.
            tokens = deps.bytes.cover(b.subarray(swallow.length)) ?? [];
            swallow = new Uint8Array(0);
          }
          for (const t of tokens) {
            const stopping = job.stopTokenIds.has(t);
            const action = (stopping ? job.steering?.onStop?.(t) : job.steering?.onToken(t)) ?? null;
            if (stopping && !action?.replaceWith) return finish({reason: "stop_token", token: t});
            let emitted = [t];
            if (action?.replaceWith) {
              emitted = action.replaceWith;
              if (emitted.length === 0 || generated.length + emitted.length > job.maxTokens) return finish({reason: "length"});
            }
            for (const e of emitted) {
              generated.push(e);
              closer?.accept(e);
              stats.predictedTokens = generated.length;
              stats.predictedMs = performance.now() - firstTokenAt;
              const score = job.logprobs && e === streamed && !action?.replaceWith ? scoreOf(chunk, e, job.logprobs.top) : undefined;
              yield score ? {kind: "token", token: e, score} : {kind: "token", token: e};
              if (job.signal.aborted) return finish({reason: "cancelled"});
            }
            if (action && (action.replaceWith || action.bind)) {
              const accept = action.bind?.accept ?? [];
              next = {basis: generated.length - accept.length, grammar: action.bind ? action.bind.grammar : segment.grammar,
                swallow: concatBytes(accept.map((a) => deps.tokenBytes(a))), accept, stepwise: false};
              break chunks;
            }
            if (generated.length >= job.maxTokens) return finish({reason: "length"});
            if (closer && (segment.stepwise || closer.due)) {
              // Closing: from here on one token per request, chosen by svc.
              next = {basis: generated.length, grammar: segment.grammar, swallow: new Uint8Array(0), accept: [], stepwise: true};
              break chunks;
            }
          }
        }
      }
      if (next === null) throw new ReplicaUnreachableError(`${target.url}/completion: the stream ended without its final chunk`);
    } catch (err) {
      if (job.signal.aborted) return finish({reason: "cancelled"});
      if (err instanceof ReplicaUnreachableError && generated.length === 0 && first) {
        await deps.failover(err);
        continue;
      }
      if (err instanceof RemoteDivergedError) {
        throw new EngineUnavailableError(`the remote continuation could not be joined to the reply already sent (${err.message})`);
      }
      if (err instanceof ReplicaUnreachableError) {
        deps.lost(err);
        throw new EngineUnavailableError(`the engine replica stopped answering in the middle of the reply (${err.message}); ` +
          "the next request goes to another replica");
      }
      throw err;
    } finally {
      job.signal.removeEventListener("abort", onAbort);
      controller.abort();
      deps.held([...prompt, ...remote]);
    }
    segment = next;
    first = false;
  }
}

/** The ids of tokens held back before `streamed` (token-gaps.ts); a gap that cannot be resolved is an error. */
function recoverHeld(content: string, streamed: number, count: number, deps: RemoteDecodeDeps): number[] {
  const own = deps.isSpecial(streamed) ? new Uint8Array(0) : deps.tokenBytes(streamed);
  const bytes = heldBackBytes(content, own);
  const ids = bytes ? deps.bytes.split(bytes, count) : null;
  if (!ids) throw new RemoteDivergedError(`the replica held back ${count} token(s) whose bytes match no vocabulary tokens`);
  return ids;
}

/**
 * One closing step as the stream of a request would carry it: the replica answers one token's candidates (not
 * streamed: a token inside a UTF-8 character would be held back) and svc's choice among them is the chunk's token.
 */
async function* closingStep(target: RemoteSlotRef, body: Record<string, unknown>, closer: StepCloser,
  signal: AbortSignal): AsyncGenerator<CompletionChunk, void, void> {
  const out = await replicaApi.completeOnce(target.url, body, signal);
  const candidates = out.completion_probabilities?.[0]?.top_logprobs ?? [];
  const token = closer.choose(candidates.map((c) => ({id: c.id, logprob: c.logprob ?? -Infinity})));
  yield {content: "", tokens: [token], tokens_predicted: 1, stop: false};
}
