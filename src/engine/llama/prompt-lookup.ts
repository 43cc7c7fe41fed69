// Prompt-lookup speculation. When the last tokens generated also occur in the prompt, the token that followed
// them there is proposed as a draft and evaluated in the same decode step as the token just generated; the
// library samples both rows and keeps the draft only if it is exactly what greedy picks next. The output is
// therefore byte-identical to plain greedy, provided a draft row cannot change the numbers of the row before
// it: that holds with flash attention on, and not with it off (bench/speculation.ts measures both), so the
// engine speculates only with flash attention on.
//
// Whether it pays is a matter of arithmetic: a step with a draft costs `stepCost` times a plain step (measured
// at load: 1.82 on the 2-core box with SmolLM2-135M) and yields 1 + p tokens, p being the chance the draft is
// right. So in `auto` a draft is sent only while the request's estimated hit rate p makes 1 + p > stepCost.
// p is observable for free: every step the lookup is asked for a proposal whether or not it is sent, and the
// next generated token says whether it would have been right (a shadow hit).
//
// Drafts are one token: node-llama-cpp 3.22.1 accepts at most one draft token per step (a longer draft's
// second token is always refuted and its row wasted), and a pattern of at least two tokens is what made the
// lookup right 86% of the time in the bench (one-token patterns: 27%).

import {InputLookupTokenPredictor, TokenPredictor, type LlamaContextSequence, type Token} from "node-llama-cpp";
import {aloneOnEveryThread} from "./decode-threads.ts";

export type SpeculationMode = "auto" | "on" | "off";

/** Weight of the earlier runs' hit rate in a run's estimate, in shadow proposals (it dominates the run's first few). */
const PRIOR_WEIGHT = 8;

/** Shadow proposals and hits over every speculating run so far: the prior for a new run. */
export class LookupRecord {
  proposals = 0;
  hits = 0;
  rate(): number {
    // Before anything is known: even odds.
    return this.proposals === 0 ? 0.5 : this.hits / this.proposals;
  }
}

export interface DraftPolicy {
  mode: Exclude<SpeculationMode, "off">;
  /** A 2-token decode step's cost over a 1-token step's (measured at load; only `auto` reads it). */
  stepCost: number;
  record: LookupRecord;
  /** Whether another region is generating: a draft step is then dispatched on its own instead of beside theirs (see batch-strategy.ts). */
  othersGenerating(): boolean;
}

/**
 * One region's predictor for one run (attached for the run only, see internals.ts attachTokenPredictor).
 * The library calls reset() when it starts, predictTokens() before every decode step and pushTokens() with
 * each token that goes into the state.
 */
export class LookupDrafter extends TokenPredictor {
  // predictionLength.max is raised to the pattern's minimum by the library; the draft is cut to one token below.
  private readonly lookup = new InputLookupTokenPredictor({patternLength: {min: 2}, predictionLength: {min: 1, max: 1}});
  /** The proposal made before the step in flight, sent or not; the next pushed token tells if it was right. */
  private pending: number | null = null;
  private runProposals = 0;
  private runHits = 0;
  /** The first step evaluates the prompt's last piece: a draft there would make that piece one token longer than its plan. */
  private firstStep = true;

  /** The engine-wide hit rate when the run started (the run's own shadows update the record as it goes). */
  private readonly prior: number;

  /**
   * `position()` is where the next step's first row goes: drafts stop where a generated step goes alone
   * (decode-threads.ts): a draft row makes that step two rows, and two rows never take the split path that a
   * lone step takes there, so whether a draft was sent would change the numbers.
   */
  constructor(private readonly policy: DraftPolicy, prompt: readonly number[], private readonly wanted: () => boolean,
    private readonly position: () => number) {
    super();
    this.prior = policy.record.rate();
    this.lookup.updateInputTokens(prompt as Token[]);
  }

  override reset(params: Parameters<TokenPredictor["reset"]>[0]): void {
    this.pending = null;
    this.lookup.reset(params);
  }

  override pushTokens(tokens: Token[]): void {
    if (this.pending !== null && tokens.length > 0) {
      const hit = tokens[0] === this.pending;
      this.runProposals++;
      this.policy.record.proposals++;
      if (hit) {
        this.runHits++;
        this.policy.record.hits++;
      }
    }
    this.pending = null;
    this.lookup.pushTokens(tokens);
  }

  override predictTokens(): Token[] {
    const proposal = this.lookup.predictTokens() as Token[];
    if (this.firstStep) {
      this.firstStep = false;
      return [];
    }
    if (proposal.length === 0) {
      this.pending = null;
      return [];
    }
    this.pending = proposal[0]!;
    return this.sendDraft() ? [proposal[0]!] : [];
  }

  /** The estimated hit rate of this run: its own shadow record, pulled towards the engine-wide rate. */
  hitRate(): number {
    return (this.runHits + PRIOR_WEIGHT * this.prior) / (this.runProposals + PRIOR_WEIGHT);
  }

  private sendDraft(): boolean {
    if (!this.wanted()) return false; // the reply ends with this step: a draft could not be used
    if (aloneOnEveryThread(this.position() + 1)) return false;
    if (this.policy.mode === "on") return true;
    if (this.policy.othersGenerating()) return false;
    return 1 + this.hitRate() > this.policy.stepCost;
  }

  // Nothing runs in the background. (The library calls stop() when it refutes a draft, before it pushes the
  // token that refuted it: `pending` must survive, or misses would never be counted.)
  override stop(): void {}

  override updateInputTokens(tokens: Token[]): void {
    this.lookup.updateInputTokens(tokens);
  }

  override dispose(): void {
    this.lookup.dispose();
  }
}

/**
 * What a 2-token decode step costs against a 1-token step, on an empty region at load (a logit sampled on
 * every row, as verification does). Sizes are interleaved, and the fastest of each is taken: on a shared
 * machine a neighbour only ever adds time (medians under load measured 0.68, a 2-token step "cheaper" than
 * a 1-token one). Never below 1. The region is left empty again.
 */
export async function measureStepCost(seq: LlamaContextSequence, context: readonly number[], reps = 12): Promise<number> {
  await seq.evaluateWithoutGeneratingNewTokens(context as Token[]);
  const start = seq.nextTokenIndex;
  const filler = context[context.length - 1]! as Token;
  const rows = (n: number) => Array.from({length: n}, () => [filler, {generateNext: {token: true}}] as [Token, {generateNext: {token: true}}]);
  const one: number[] = [];
  const two: number[] = [];
  try {
    for (let r = -1; r < reps; r++) { // r = -1 warms up
      for (const [n, into] of [[1, one], [2, two]] as const) {
        const t0 = performance.now();
        await seq.controlledEvaluate(rows(n));
        if (r >= 0) into.push(performance.now() - t0);
        await seq.eraseContextTokenRanges([{start, end: seq.nextTokenIndex}]);
      }
    }
  } finally {
    await seq.clearHistory();
  }
  return Math.max(1, Math.min(...two) / Math.min(...one));
}
