// Grammar-constrained decoding on the library's native sampler. The grammar is compiled once per
// distinct schema and kept (bounded); each request gets its own evaluation state. Whitespace runs need
// nothing here: the grammar allows at most two whitespace characters per gap (src/grammar/gbnf.ts).
// On top of the grammar, when the budget is about to run out, the reply is steered to close: a constrained reply must parse,
//   and a small model can nest or list forever (a recursive schema, an open object). Once the tokens left
//   come within reach of the open nesting depth, closers (" } ] null) are pushed up and openers and commas
//   down. The grammar still decides what is legal; the bias only chooses the way out among legal tokens.

import {LlamaGrammarEvaluationState, TokenBias, type Llama, type LlamaGrammar, type LlamaModel, type Token} from "node-llama-cpp";

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

/** Token classes of a vocabulary that the constraint needs, computed once per model. */
export interface TokenClasses {
  whitespaceOnly: ReadonlySet<number>;
  /** Text is only closers after optional whitespace: " } ] and null. */
  closers: ReadonlySet<number>;
  /** Text opens a value or continues a list: contains { [ or a comma. */
  openers: ReadonlySet<number>;
  text(token: number): string;
}

export function classifyTokens(count: number, text: (t: number) => string, isSpecial: (t: number) => boolean): TokenClasses {
  const whitespaceOnly = new Set<number>();
  const closers = new Set<number>();
  const openers = new Set<number>();
  for (let t = 0; t < count; t++) {
    if (isSpecial(t)) continue;
    const s = text(t);
    if (s.length === 0) continue;
    if (/^[ \t\n\r]+$/.test(s)) whitespaceOnly.add(t);
    else if (/^[ \t\n\r]*(?:[}\]"]+|null)$/.test(s)) closers.add(t);
    else if (/[{[,]/.test(s)) openers.add(t);
  }
  return {whitespaceOnly, closers, openers, text};
}

/** Follows the nesting depth of the JSON written so far (objects and arrays; strings count as one level). */
class JsonDepth {
  depth = 0;
  inString = false;
  private escaped = false;

  push(text: string): void {
    for (const ch of text) {
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (ch === "\\") this.escaped = true;
        else if (ch === '"') {
          this.inString = false;
          this.depth--;
        }
      } else if (ch === '"') {
        this.inString = true;
        this.depth++;
      } else if (ch === "{" || ch === "[") this.depth++;
      else if ((ch === "}" || ch === "]") && this.depth > 0) this.depth--;
    }
  }
}

/** Tokens to keep in hand per open level, plus a margin, before the reply is steered to close. */
const CLOSING_TOKENS_PER_LEVEL = 6;
const CLOSING_MARGIN = 12;

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
    for (const bias of [this.closing, this.closingInString]) {
      for (const t of classes.whitespaceOnly) bias.set(t as Token, "never");
      for (const t of classes.openers) bias.set(t as Token, {logit: -30});
    }
    for (const t of classes.closers) {
      this.closing.set(t as Token, {logit: 30});
      // A run of } or ] inside a string only lengthens it (a reply once filled its budget with "}}}}]]]" there).
      this.closingInString.set(t as Token, {logit: classes.text(t).includes('"') ? 30 : -30});
    }
  }

  /** Called with each generated token, before the next is sampled. */
  accept(token: number): void {
    this.json.push(this.classes.text(token));
    this.left--;
  }

  /** Empty until the closing phase: an unchanging bias keeps the native sampler chain as it is. */
  bias(): TokenBias {
    if (this.json.depth > 0 && this.left <= CLOSING_TOKENS_PER_LEVEL * this.json.depth + CLOSING_MARGIN) {
      this.closingSteps++;
      return this.json.inString ? this.closingInString : this.closing;
    }
    return this.none;
  }
}
