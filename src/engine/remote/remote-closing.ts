// Closing JSON as the token budget runs out, on a replica (the rule: ../json-closing.ts). A replica applies our
// grammar but cannot be handed the closing bias part-way through a request, and a new request would start the
// grammar over. So svc follows the grammar state itself, with the same llama.cpp grammar over the local vocabulary,
// and once closing is due decodes the rest one token per request: the replica evaluates the reply so far (its prompt
// cache holds all but the last token) and returns its most likely next tokens from the raw distribution (`n_probs`);
// svc takes the best one the grammar allows after the closing bias. The in-process engine does the same inside its
// sampler; here the choice is greedy over the biased candidates.

import {LlamaGrammarEvaluationState, type Llama, type LlamaGrammar, type LlamaModel} from "node-llama-cpp";
import {closingBias, closingDue, CLOSING_PUSH, JsonDepth, type TokenClasses} from "../json-closing.ts";
import {acceptGrammarToken, grammarAllows} from "../llama/internals.ts";

/** Candidates a replica returns per closing step. */
export const CLOSING_CANDIDATES = 64;

/** What remote decoding asks of svc's copy of a grammar binding's state. */
export interface StepCloser {
  /** A token of the reply under this grammar (sampled by the replica or placed by the steering). */
  accept(token: number): void;
  /** Whether the reply must now be closed (from then on every step is one request). */
  readonly due: boolean;
  /** The next token among the replica's candidates (log probabilities from the raw distribution). */
  choose(candidates: readonly {id: number; logprob: number}[]): number;
}

export class RemoteCloser implements StepCloser {
  private readonly state: LlamaGrammarEvaluationState;
  private readonly json = new JsonDepth();
  /** Steps decoded one token per request (for tests and the log). */
  steps = 0;
  /** The local grammar state refused a token: closing is left undone rather than guided by a wrong state. */
  private lost = false;

  constructor(private readonly llama: Llama, model: LlamaModel, grammar: LlamaGrammar, private readonly classes: TokenClasses,
    private readonly vocabSize: number, private left: number) {
    this.state = new LlamaGrammarEvaluationState({model, grammar});
  }

  accept(token: number): void {
    this.json.push(this.classes.text(token));
    this.left--;
    if (this.lost) return;
    try {
      acceptGrammarToken(this.llama, this.state, token);
    } catch {
      // A token the local grammar refuses (a steering replacement the replica's grammar never saw): svc can no longer
      // follow the grammar, so it leaves the reply to the replica rather than choose by a wrong state.
      this.lost = true;
    }
  }

  get due(): boolean {
    return !this.lost && closingDue(this.json, this.left);
  }

  /**
   * The next token: the candidate with the highest log probability plus closing bias that the grammar allows. When
   * none of the replica's candidates is allowed, the first token the grammar allows in the order closers, neutral
   * tokens, openers, whitespace (a scan of the vocabulary; the grammar always allows something until it is complete,
   * and then end of generation).
   */
  choose(candidates: readonly {id: number; logprob: number}[]): number {
    this.steps++;
    let best: number | null = null;
    let bestScore = -Infinity;
    for (const c of candidates) {
      const bias = closingBias(this.classes, c.id, this.json.inString);
      if (bias === "never" || !grammarAllows(this.llama, this.state, c.id)) continue;
      const score = c.logprob + bias;
      if (score > bestScore) {
        best = c.id;
        bestScore = score;
      }
    }
    return best ?? this.anyAllowed();
  }

  private anyAllowed(): number {
    const rank = (t: number) => {
      const b = closingBias(this.classes, t, this.json.inString);
      return b === "never" ? 3 : b === CLOSING_PUSH ? 0 : b === 0 ? 1 : 2;
    };
    let found: number | null = null;
    for (let t = 0; t < this.vocabSize; t++) {
      if (found !== null && rank(t) >= rank(found)) continue;
      if (grammarAllows(this.llama, this.state, t)) found = t;
      if (found !== null && rank(found) === 0) break;
    }
    if (found === null) throw new Error("the grammar allows no token at all");
    return found;
  }
}
