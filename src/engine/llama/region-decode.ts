// One request's run on one region: the part of the prompt the pool prepared (see kv/region-memory.ts) is
// kept, the rest is fed in the pieces of the prompt's cut plan (so how a prompt is cut never depends on
// batching, caching or what else runs; matched by rows, consecutive tiled pieces may go together, which leaves
// every row's class as planned), then tokens are
// generated: with the library's native sampler chain (with prompt-lookup drafts for an eligible greedy run,
// see prompt-lookup.ts), or scored against the raw logits when log probabilities are wanted. Cancellation is
// checked between pieces and between steps.

import type {LlamaContextSequence, LlamaContextSequenceRepeatPenalty, SequenceEvaluateOptions, Token, TokenBias} from "node-llama-cpp";
import type {SamplingParams} from "../../core/generation.ts";
import type {DecodeEnd, DecodeJob, DecodeRun, DecodeStats, GrammarRef} from "../engine.ts";
import {ContextOverflowError, neverShift} from "./context-overflow.ts";
import type {GrammarConstraint} from "./grammar-constraint.ts";
import {piecesFrom, type RegionMemory} from "../kv/region-memory.ts";
import {mergeTiled, SPLIT_ROW_FROM, TILED_ROWS} from "../kv/row-classes.ts";
import {scoredGeneration} from "./scored-decode.ts";
import {attachTokenPredictor, detachTokenPredictor} from "./internals.ts";
import {LookupDrafter, type DraftPolicy} from "./prompt-lookup.ts";

/** The grammar binding of a run: which constraint is active now (it may change between steps). */
interface ActiveGrammar {
  current: GrammarConstraint | undefined;
  /** Returned as the bias while no constraint needs one: an unchanging bias keeps the native sampler chain. */
  none: TokenBias;
}

function samplerOptions(s: SamplingParams, generated: () => Token[], grammar: ActiveGrammar | undefined): SequenceEvaluateOptions {
  const penalize = s.repeatPenalty !== 1 || s.presencePenalty !== 0 || s.frequencyPenalty !== 0;
  let repeatPenalty: LlamaContextSequenceRepeatPenalty | undefined;
  if (penalize && s.repeatLastN !== 0) {
    repeatPenalty = {
      punishTokens: () => {
        const all = generated();
        return s.repeatLastN < 0 ? all : all.slice(-s.repeatLastN);
      },
      maxPunishTokens: s.repeatLastN < 0 ? 1 << 30 : s.repeatLastN,
      penalty: s.repeatPenalty,
      presencePenalty: s.presencePenalty,
      frequencyPenalty: s.frequencyPenalty,
    };
  }
  return {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    seed: s.seed,
    repeatPenalty,
    yieldEogToken: true,
    contextShift: neverShift,
    // Resolved by the library before every sampling step, so a binding made between steps applies to the next.
    ...(grammar ? {grammarEvaluationState: () => grammar.current?.state, tokenBias: () => grammar.current?.bias() ?? grammar.none} : {}),
  };
}

/** Told when the region is between two steps of generation, so the batch policy can wait for its step. */
export interface GeneratingMark {
  set(generating: boolean): void;
}

/** What a run needs from the engine to bind grammars. */
export interface GrammarBinder {
  /** A fresh constraint for this grammar, with `budget` tokens left. */
  constraint(grammar: GrammarRef, budget: number): Promise<GrammarConstraint>;
  /** Feeds a token into a fresh constraint's grammar state (tokens the pipeline placed, not sampled). */
  accept(constraint: GrammarConstraint, token: number): void;
  none: TokenBias;
}

export interface RunHooks {
  /** Prompt tokens the region was prepared with (kept, not evaluated). */
  reused: number;
  /** A long cold prefill starts (true) or ends (false), for the cache report's staleness. */
  longPrefill(running: boolean): void;
  longPrefillTokens: number;
  /** Prompt-lookup speculation for this run (the engine decides who is eligible), or null. */
  drafts: DraftPolicy | null;
  /** Awaited before each prompt piece or decode step is queued (the pool holds them back while a preparation waits: region-pool.ts). */
  beforeDecode(): Promise<void>;
  /**
   * Most rows consecutive tiled pieces may take as one evaluation now (matched by rows only; the engine's probed merge
   * size), or 0: not while another region generates, whose next token would wait for the whole evaluation (pieces
   * and steps alternate: batch-strategy.ts).
   */
  mergeRows(): number;
}

/**
 * Longest a merged evaluation should take: the granularity of cancellation and of a new request's turn. About what
 * llama-server's 512-row micro-batch takes at 20k tokens of context here; long enough that 16k-token prompts still
 * merge 512 rows (kv/row-classes.ts: smaller merges waste attention tiles).
 */
const MERGED_PIECE_MS = 8000;

/**
 * Rows a merged evaluation may take at the rate the last piece ran (unknown before the first: no merge): a power of two
 * times TILED_ROWS, the sizes whose attention tiles are full (kv/row-classes.ts, MERGED_TILED_ROWS).
 */
function mergeLimit(msPerRow: number, mergeRows: number): number {
  const fits = Math.min(mergeRows, Math.floor(MERGED_PIECE_MS / msPerRow));
  let rows = TILED_ROWS;
  while (rows * 2 <= fits) rows *= 2;
  return rows;
}

export async function* runOnRegion(seq: LlamaContextSequence, job: DecodeJob, stats: DecodeStats, mark: GeneratingMark,
  memory: RegionMemory, binder: GrammarBinder, hooks: RunHooks): DecodeRun {
  const started = performance.now();
  const constrained = job.grammar !== undefined || job.steering !== undefined;
  if (constrained && job.logprobs) throw new Error("log probabilities under a grammar are not supported (the dialect refuses this)");
  const grammar: ActiveGrammar | undefined = constrained
    ? {current: job.grammar ? await binder.constraint(job.grammar, job.maxTokens) : undefined, none: binder.none}
    : undefined;
  // node-llama-cpp brands token ids; ours are plain numbers checked at the edge.
  const prompt = job.prompt as Token[];
  stats.promptTokens = prompt.length;
  if (prompt.length === 0) throw new Error("empty prompt");
  const reuse = hooks.reused;
  if (seq.nextTokenIndex !== reuse) throw new Error(`region holds ${seq.nextTokenIndex} tokens but was prepared for ${reuse}`);
  stats.cachedTokens = reuse;
  memory.decodedExactTo = undefined;

  const pieces = piecesFrom(job.plan.cuts, reuse);
  const last = pieces.pop()!;
  const long = prompt.length - reuse >= hooks.longPrefillTokens;
  if (long) hooks.longPrefill(true);
  yield {kind: "progress", processed: stats.cachedTokens, elapsedMs: 0};
  try {
    let msPerRow = Infinity;
    for (let i = 0; i < pieces.length;) {
      if (job.signal.aborted) return {reason: "cancelled"};
      await hooks.beforeDecode();
      if (job.signal.aborted) return {reason: "cancelled"};
      const mergeRows = job.plan.match === "rows" ? hooks.mergeRows() : 0;
      const take = mergeRows > 0 ? mergeTiled(pieces.slice(i), mergeLimit(msPerRow, mergeRows)) : 1;
      const a = pieces[i]![0];
      const b = pieces[i + take - 1]![1];
      const t0 = performance.now();
      await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(a, b), {contextShift: neverShift});
      msPerRow = (performance.now() - t0) / (b - a);
      memory.tokens.push(...prompt.slice(a, b));
      // The plan's cuts, as if evaluated one by one: merged tiled pieces are tiled rows all the same.
      for (const [, end] of pieces.slice(i, i + take)) memory.cuts.push(end);
      yield {kind: "progress", processed: b, elapsedMs: performance.now() - started};
      i += take;
    }
  } finally {
    if (long) hooks.longPrefill(false);
  }
  await hooks.beforeDecode();
  if (job.signal.aborted) return {reason: "cancelled"};
  // The last piece is evaluated together with the first sampling step; its KV is the same as a plain
  // evaluation's, so it is exact too once the first token comes.
  const lastPiece = prompt.slice(last[0], last[1]);
  const lastEvaluated = () => {
    if (memory.tokens.length !== last[0]) return;
    memory.tokens.push(...lastPiece);
    memory.cuts.push(last[1]);
  };
  if (job.logprobs) {
    const run = scoredGeneration(seq, lastPiece, job, stats, mark, started);
    try {
      for (;;) {
        await hooks.beforeDecode();
        const r = await run.next();
        if (r.done) return r.value;
        if (r.value.kind === "token") {
          lastEvaluated();
          memory.tokens.push(r.value.token);
        }
        yield r.value;
      }
    } finally {
      // Reached also when our consumer stops early: the inner run must clear its generating mark.
      await run.return({reason: "cancelled"});
    }
  }

  const generated: Token[] = [];
  const drafter = hooks.drafts && !grammar
    // A draft is worth a row only while at least two more tokens are wanted: this step's and the draft's.
    ? new LookupDrafter(hooks.drafts, prompt, () => generated.length + 2 <= job.maxTokens, () => seq.nextTokenIndex)
    : null;
  const predictionsBefore = seq.tokenPredictions;
  if (drafter) attachTokenPredictor(seq, drafter);
  const gen = seq.evaluate(lastPiece, samplerOptions(job.sampling, () => generated, grammar));
  let firstTokenAt = 0;
  let end: DecodeEnd = {reason: "length"};
  /** Tokens that replace the last sampled one: evaluated by the next step instead of it. */
  let replacement: Token[] | undefined;
  try {
    steps: while (generated.length < job.maxTokens) {
      let res: IteratorResult<Token, void>;
      await hooks.beforeDecode();
      try {
        res = await gen.next(replacement as never);
        replacement = undefined;
      } catch (err) {
        if (err instanceof ContextOverflowError) break; // backstop only: the budget is fitted before we start
        throw err;
      }
      if (res.done) break;
      const token: number = res.value;
      if (firstTokenAt === 0) {
        firstTokenAt = performance.now();
        lastEvaluated();
        stats.promptMs = firstTokenAt - started;
        yield {kind: "progress", processed: prompt.length, elapsedMs: stats.promptMs};
      }
      const stopping = job.stopTokenIds.has(token);
      const action = (stopping ? job.steering?.onStop?.(token) : job.steering?.onToken(token)) ?? null;
      if (stopping && !action?.replaceWith) {
        end = {reason: "stop_token", token};
        break;
      }
      let emitted: number[] = [token];
      if (action?.replaceWith) {
        // The active grammar state has already taken the sampled token, so a replacement must rebind.
        if (grammar?.current && !action.bind) throw new Error("steering replaced a token under a grammar without rebinding it");
        emitted = action.replaceWith;
        // Never past the fitted budget: the region has room for exactly that many generated tokens.
        if (emitted.length === 0 || generated.length + emitted.length > job.maxTokens) break;
        replacement = emitted as Token[];
        // Evaluated as one piece from the replaced token's place: its rows are "row" rows, not split ones.
        const at = prompt.length + generated.length;
        if (emitted.length > 1 && at + emitted.length > SPLIT_ROW_FROM) memory.decodedExactTo ??= Math.max(at, SPLIT_ROW_FROM);
      }
      if (action?.bind && grammar) {
        for (const t of emitted.slice(0, emitted.length - (action.bind.accept?.length ?? 0))) grammar.current?.accept(t);
        const left = job.maxTokens - generated.length - emitted.length;
        grammar.current = action.bind.grammar ? await binder.constraint(action.bind.grammar, left + (action.bind.accept?.length ?? 0)) : undefined;
        for (const t of action.bind.accept ?? []) {
          if (grammar.current) binder.accept(grammar.current, t);
          grammar.current?.accept(t);
        }
      } else {
        for (const t of emitted) grammar?.current?.accept(t);
      }
      for (const t of emitted) {
        generated.push(t as Token);
        memory.tokens.push(t);
        stats.predictedTokens = generated.length;
        stats.predictedMs = performance.now() - firstTokenAt;
        mark.set(generated.length < job.maxTokens);
        yield {kind: "token", token: t};
        if (job.signal.aborted) {
          end = {reason: "cancelled"};
          break steps;
        }
      }
    }
  } finally {
    mark.set(false);
    try {
      await gen.return(undefined);
    } finally {
      if (drafter) {
        const after = seq.tokenPredictions;
        stats.draftTokens = after.validated + after.refuted - predictionsBefore.validated - predictionsBefore.refuted;
        stats.draftAccepted = after.validated - predictionsBefore.validated;
        await detachTokenPredictor(seq);
      }
    }
    if (firstTokenAt === 0) stats.promptMs = performance.now() - started;
    else stats.predictedMs = performance.now() - firstTokenAt;
  }
  return end;
}
