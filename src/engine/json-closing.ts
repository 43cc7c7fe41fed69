// Closing JSON as the token budget runs out, for both engines: a constrained reply must parse, and a small model
// can nest or list forever (a recursive schema, an open object). Once the tokens left come within reach of the
// open nesting depth, closers (" } ] null) are pushed up and openers and commas down. The grammar still decides
// what is legal; the bias only chooses the way out among legal tokens. The in-process engine applies the bias in
// its sampler (llama/grammar-constraint.ts); a remote replica picks among the replica's candidates with it
// (remote/remote-closing.ts).

/** Token classes of a vocabulary that the closing needs, computed once per model. */
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
export class JsonDepth {
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
/** How hard closers are pushed up and openers down (logits). */
export const CLOSING_PUSH = 30;

/** Whether the reply must now be steered to close: something is open and the tokens left come within reach of it. */
export function closingDue(json: JsonDepth, left: number): boolean {
  return json.depth > 0 && left <= CLOSING_TOKENS_PER_LEVEL * json.depth + CLOSING_MARGIN;
}

/**
 * A token's bias while closing: "never" for whitespace, +CLOSING_PUSH for closers, −CLOSING_PUSH for openers, 0 for the
 * rest. Inside a string } and ] are text: only a closer with a quote ends the string, so only those are pushed up (a
 * reply once filled its budget with "}}}}]]]" there).
 */
export function closingBias(classes: TokenClasses, token: number, inString: boolean): number | "never" {
  if (classes.whitespaceOnly.has(token)) return "never";
  if (classes.openers.has(token)) return -CLOSING_PUSH;
  if (classes.closers.has(token)) return !inString || classes.text(token).includes('"') ? CLOSING_PUSH : -CLOSING_PUSH;
  return 0;
}
