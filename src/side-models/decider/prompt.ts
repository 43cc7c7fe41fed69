// The decision prompt: a fixed head, the text to judge, then the question and its options, rendered as
// ChatML. The text comes first (after a head that never changes) so that several questions about one text,
// and later texts that only extend it, share its KV; the mark at the end of the text is a cut the scorer
// keeps, so that reuse is exact (see lm/scorer.ts).
//
// Every option is read as ONE token, so one pass gives all of them: lettered options ("A. …") read the
// letter, levels of a score read the digit, yes/no questions read "Yes"/"No". The assistant turn is opened
// and the answer token is the first thing it would write.

import {CHATML, labelSet, PromptBuilder, type LabelSet, type Tokenizer} from "../lm/labels.ts";

export const DECISION_LIMITS = {
  minOptions: 2,
  maxOptions: 10,
  /** Text plus question plus template, in tokens. */
  maxPromptTokens: 8192,
} as const;

/** One question about the text, in the form the prompt writes it. */
export type DecisionQuestion =
  /** Options written as lettered lines; `label` is the option's name, `description` an optional gloss. */
  | {kind: "options"; question: string; options: {label: string; description?: string | null}[]}
  /** Levels 0..n-1 written as numbered lines; the answer is the level's digit. */
  | {kind: "levels"; question: string; levels: string[]}
  /** A yes/no question; options are [yes, no]. */
  | {kind: "yes-no"; question: string};

const SYSTEM = "You read a text and answer one question about it. Reply with the label of one option and nothing else.";

export function optionCount(q: DecisionQuestion): number {
  return q.kind === "options" ? q.options.length : q.kind === "levels" ? q.levels.length : 2;
}

const LETTERS = "ABCDEFGHIJ";

/** The single tokens read for a question's options, in option order. */
export function answerLabels(tok: Tokenizer, q: DecisionQuestion): LabelSet {
  const n = optionCount(q);
  if (q.kind === "yes-no") return labelSet(tok, ["Yes", "No"]);
  if (q.kind === "levels") return labelSet(tok, Array.from({length: n}, (_, i) => String(i)));
  return labelSet(tok, LETTERS.slice(0, n).split(""));
}

/** Head and text: the part every question about the text shares. Returns the builder and where the text ends. */
export function textPart(tok: Tokenizer, text: string): {builder: PromptBuilder; textEnd: number} {
  const builder = new PromptBuilder(tok)
    .template(CHATML.open("system") + SYSTEM + CHATML.close + CHATML.open("user") + "Text:\n")
    .client(text);
  return {builder, textEnd: builder.mark()};
}

/** The whole prompt of one question about a text. */
export function decisionPrompt(tok: Tokenizer, text: string, q: DecisionQuestion): {tokens: number[]; textEnd: number} {
  const {builder, textEnd} = textPart(tok, text);
  builder.template("\n\nQuestion: ").client(q.question).template("\n");
  if (q.kind === "options") {
    builder.template("Options:\n");
    q.options.forEach((o, i) => {
      builder.template(`${LETTERS[i]}. `).client(o.label);
      if (o.description) builder.template(" - ").client(o.description);
      builder.template("\n");
    });
    builder.template("Answer with the letter of one option.");
  } else if (q.kind === "levels") {
    builder.template("Levels:\n");
    q.levels.forEach((l, i) => builder.template(`${i}. `).client(l).template("\n"));
    builder.template("Answer with the number of one level.");
  } else {
    builder.template("Answer Yes or No.");
  }
  builder.template(CHATML.close + CHATML.open("assistant"));
  return {tokens: builder.tokens, textEnd};
}
