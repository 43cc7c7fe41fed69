// Grammar-constrained decoding on the library's native sampler. The grammar is compiled once per
// distinct schema and kept (bounded); each request gets its own evaluation state. Whitespace runs need
// nothing here: the grammar allows at most two whitespace characters per gap (src/grammar/gbnf.ts).
// On top of the grammar, when the budget is about to run out, the reply is steered to close (../json-closing.ts): the
// closing bias goes into the sampler as a token bias.

import {LlamaGrammarEvaluationState, TokenBias, type Llama, type LlamaGrammar, type LlamaModel, type Token} from "node-llama-cpp";
import {closingBias, closingDue, JsonDepth, type TokenClasses} from "../json-closing.ts";


const CACHED_GRAMMARS = 64;

export class GrammarStore {
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(private readonly llama: Llama) {}

  get(gbnf: string, key: string): Promise<LlamaGrammar> {
    const hit = this.grammars.get(key);
    if (hit) {
      this.grammars.delete(key); // refresh its place in the LRU order
      this.grammars.set(key, hit);
      return hit;
    }
    const made = this.llama.createGrammar({grammar: gbnf});
    made.catch(() => this.grammars.delete(key));
    this.grammars.set(key, made);
    while (this.grammars.size > CACHED_GRAMMARS) this.grammars.delete(this.grammars.keys().next().value!);
    return made;
  }
}

/** Per-request constraint: the grammar state and the token bias for the next step. */
export class GrammarConstraint {
  readonly state: LlamaGrammarEvaluationState;
  private readonly none: TokenBias;
  private readonly closing: TokenBias;
  /** Inside a string, } and ] are text: only a closer with a quote ends the string, so only those are pushed up. */
  private readonly closingInString: TokenBias;
  private readonly json = new JsonDepth();
  private left: number;
  /** Steps taken with the closing bias (for the log line and tests). */
  closingSteps = 0;

  constructor(model: LlamaModel, grammar: LlamaGrammar, private readonly classes: TokenClasses, budget: number) {
    this.state = new LlamaGrammarEvaluationState({model, grammar});
    this.left = budget;
    this.none = new TokenBias(model.tokenizer);
    this.closing = new TokenBias(model.tokenizer);
    this.closingInString = new TokenBias(model.tokenizer);
    for (const [bias, inString] of [[this.closing, false], [this.closingInString, true]] as const) {
      for (const set of [classes.whitespaceOnly, classes.openers, classes.closers]) {
        for (const t of set) {
          const b = closingBias(classes, t, inString);
          bias.set(t as Token, b === "never" ? "never" : {logit: b});
        }
      }
    }
  }

  /** Called with each generated token, before the next is sampled. */
  accept(token: number): void {
    this.json.push(this.classes.text(token));
    this.left--;
  }

  /** Empty until the closing phase: an unchanging bias keeps the native sampler chain as it is. */
  bias(): TokenBias {
    if (closingDue(this.json, this.left)) {
      this.closingSteps++;
      return this.json.inString ? this.closingInString : this.closing;
    }
    return this.none;
  }
}
