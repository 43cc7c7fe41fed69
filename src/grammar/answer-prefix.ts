// A grammar whose text must come after a literal lead-in: harmony replies (gpt-oss) put a JSON answer in a final
// message, so the schema binds after `<|channel|>final<|message|>` (and the `<|start|>assistant` that opens a
// message after reasoning). The lead-in is a GBNF expression the model family supplies.

export interface PrefixableGrammar {
  gbnf: string;
  key: string;
}

/** `g`, preceded by the GBNF expression `prefix`. g's own root rule is renamed so the new root can call it. */
export function withAnswerPrefix(g: PrefixableGrammar, prefix: string): PrefixableGrammar {
  if (!/^root ::= /m.test(g.gbnf)) throw new TypeError("a grammar to prefix must define a root rule");
  const renamed = g.gbnf.replace(/^root ::= /m, "svc-answer-root ::= ");
  return {gbnf: `root ::= ${prefix} svc-answer-root\n${renamed}`, key: `${g.key}|after:${prefix}`};
}
