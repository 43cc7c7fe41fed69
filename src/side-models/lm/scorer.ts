// Next-token log probabilities from a decoder side model: the one primitive behind decisions, reranking,
// moderation and the streaming guard. Each call is one executor pass on a context of the runner's own.
//
// The KV the context keeps may be reused by the next call (SVC_NPU_DEC_RESUME, the guard reading a reply
// as it grows), and reuse must not change a single number. Evaluation therefore follows the cut plan of
// engine/kv/region-memory.ts: pieces end at absolute multiples of PIECE and at the boundaries the caller
// marks (the end of a shared text), and a prefix is reused only up to a cut both plans share. A token's KV
// then never depends on whether it was computed now or by an earlier call.

import {emptyMemory, EngineMemoryError, InsufficientMemoryError, neverShift, piecesFrom, planCuts, reusableByPieces, type LlamaContext,
  type LlamaContextSequence, type LlamaModel, type RegionMemory, type Token} from "../../engine/index.ts";
import type {SideModelContext} from "../side-models.ts";

const PIECE = 64;

export interface ScoreOptions {
  /** Extra cut points inside the prompt (e.g. where the text shared with later calls ends). */
  boundaries?: readonly number[];
  /** May the KV held from earlier calls be reused? Off, the context is cleared first. */
  reuse?: boolean;
  signal?: AbortSignal;
}

export interface ScoreResult {
  /** log p(candidate | prompt) under the model's full distribution, in the order asked. */
  logprobs: number[];
  /** Prompt tokens taken from the kept KV instead of evaluated. */
  reused: number;
  promptMs: number;
}

/** What a context's KV holds: its tokens and the piece ends they were computed with. */
export interface HeldState {
  tokens: number[];
  cuts: number[];
}

export class LmScorer {
  private memory: RegionMemory = emptyMemory();

  private constructor(readonly model: LlamaModel, private readonly context: LlamaContext, private readonly seq: LlamaContextSequence,
    private readonly side: SideModelContext) {}

  static async create(model: LlamaModel, side: SideModelContext, contextSize: number): Promise<LmScorer> {
    let context: LlamaContext;
    try {
      context = await model.createContext({
        sequences: 1,
        // One cell past the training context: node-llama-cpp keeps the last cell free, so this is what lets a
        // prompt use every trained position (0 .. trainContextSize-1), as the decision limit of 8,192 needs.
        contextSize: Math.min(contextSize, model.trainContextSize + 1),
        batchSize: PIECE,
        threads: {ideal: side.threads, min: 1},
        flashAttention: false,
        failedCreationRemedy: false,
      });
    } catch (err) {
      // A context made for one request (a watched reply) that does not fit is that request's 503, not the server's end.
      if (err instanceof InsufficientMemoryError) {
        throw new EngineMemoryError(`the side model needs a ${contextSize}-position context and the host has not the memory for it now: ` +
          `${err.message}; retry later`, 5);
      }
      throw err;
    }
    return new LmScorer(model, context, context.getSequence(), side);
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  tokenize(text: string, special: boolean): number[] {
    return this.model.tokenize(text, special) as number[];
  }

  /** Runs as one pass on the side executor. */
  score(prompt: readonly number[], candidates: readonly number[], opts: ScoreOptions = {}): Promise<ScoreResult> {
    return this.side.executor.run(() => this.scoreNow(prompt, candidates, opts), opts.signal);
  }

  /** The same, for a caller already inside an executor pass. */
  async scoreNow(prompt: readonly number[], candidates: readonly number[], opts: ScoreOptions = {}): Promise<ScoreResult> {
    if (prompt.length === 0) throw new Error("LmScorer: empty prompt");
    if (prompt.length >= this.context.contextSize) throw new Error(`LmScorer: prompt of ${prompt.length} tokens does not fit ${this.context.contextSize}`);
    const started = performance.now();
    const plan = planCuts(prompt.length, PIECE, opts.boundaries ?? []);
    const keep = opts.reuse ? reusableByPieces(this.memory, prompt, plan).length : 0;
    if (this.seq.nextTokenIndex > keep) await this.seq.eraseContextTokenRanges([{start: keep, end: this.seq.nextTokenIndex}]);
    this.memory = {tokens: prompt.slice(0, keep) as number[], cuts: plan.filter((c) => c <= keep), lastUsed: performance.now(), replyStart: 0};
    const pieces = piecesFrom(plan, keep);
    let logprobs: number[] = [];
    for (let i = 0; i < pieces.length; i++) {
      const [a, b] = pieces[i]!;
      const tokens = prompt.slice(a, b) as Token[];
      if (i < pieces.length - 1) {
        await this.seq.evaluateWithoutGeneratingNewTokens(tokens, {contextShift: neverShift});
      } else {
        logprobs = await this.lastPiece(tokens, candidates);
      }
      this.memory.tokens.push(...tokens);
      this.memory.cuts.push(b);
    }
    return {logprobs, reused: keep, promptMs: performance.now() - started};
  }

  /** The tokens and cut record of the KV the context holds now: what the next `reuse` may serve. */
  held(): HeldState {
    return {tokens: [...this.memory.tokens], cuts: [...this.memory.cuts]};
  }

  /**
   * Writes the held KV to a file (inside an executor pass), so that a later call can restore it: how the
   * decider keeps several texts (SVC_NPU_DEC_RESUME=2) on one context. The file is a byte copy of the KV
   * cells, so a restored prefix serves exactly the numbers it held.
   */
  async saveNow(path: string): Promise<HeldState & {bytes: number}> {
    const {fileSize} = await this.seq.saveStateToFile(path);
    return {...this.held(), bytes: fileSize};
  }

  /** Replaces the held KV by one saved with `saveNow` from this context (inside an executor pass). */
  async restoreNow(path: string, state: HeldState): Promise<void> {
    // acceptRisk: the library cannot check the file came from the same model; it did (this context wrote it).
    await this.seq.loadStateFromFile(path, {acceptRisk: true});
    if (this.seq.nextTokenIndex !== state.tokens.length) {
      throw new Error(`LmScorer: restored ${this.seq.nextTokenIndex} tokens, expected ${state.tokens.length}`);
    }
    this.memory = {tokens: [...state.tokens], cuts: [...state.cuts], lastUsed: performance.now(), replyStart: 0};
  }

  private async lastPiece(tokens: Token[], candidates: readonly number[]): Promise<number[]> {
    const last = tokens.length - 1;
    const items = tokens.map((t, i) => (i < last ? t : ([t, {
      generateNext: {token: true, totalLogitWeight: true, logits: {filter: {tokens: [...candidates] as Token[], includeTop: 1}}, options: {temperature: 0}},
    }] as const)));
    const out = await this.seq.controlledEvaluate(items as never, {contextShift: neverShift});
    const next = out[last]?.next;
    if (!next?.logits || next.totalLogitWeight === undefined) throw new Error("the side model returned no logits");
    let max = -Infinity;
    for (const [, logit] of next.logits) if (logit > max) max = logit;
    const logZ = max + Math.log(next.totalLogitWeight);
    const byToken = new Map<number, number>(next.logits as Iterable<[number, number]>);
    return candidates.map((t) => {
      const logit = byToken.get(t);
      if (logit === undefined) throw new Error(`the side model returned no logit for candidate token ${t}`);
      return logit - logZ;
    });
  }

  async close(): Promise<void> {
    await this.context.dispose();
  }
}

/** Softmax over a few log probabilities: the candidates' shares of their own total. */
export function renormalise(logprobs: readonly number[]): number[] {
  const max = Math.max(...logprobs);
  const e = logprobs.map((l) => Math.exp(l - max));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}
