// svc's copy of a grammar state on a replica's behalf (remote/remote-closing.ts), on the default model's real
// vocabulary and a real compiled grammar: when closing becomes due, which of a replica's candidates it takes, what it
// does when none is allowed, and that a token its grammar refuses turns the closing off instead of throwing.

import assert from "node:assert/strict";
import {homedir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {classifyTokens, type TokenClasses} from "../../src/engine/json-closing.ts";
import {LocalVocabulary} from "../../src/engine/remote/local-vocabulary.ts";
import {RemoteCloser} from "../../src/engine/remote/remote-closing.ts";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../src/models/known-files.ts";
import {resolveModel} from "../../src/models/resolve.ts";
import {createMemoryLogger} from "../../src/observability/log.ts";

// The vocabulary as the remote engine loads it: vocab only, no weights.
let vocab: LocalVocabulary;
let classes: TokenClasses;
before(async () => {
  const logger = createMemoryLogger();
  const resolved = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: join(homedir(), ".cache", "svc", "models"), logger, progress: "lines"});
  vocab = await LocalVocabulary.load(resolved.path, logger);
  const decoder = new TextDecoder();
  classes = classifyTokens(vocab.size, (t) => decoder.decode(vocab.tokenBytes(t)), (t) => vocab.model.isSpecialToken(t as never));
});
after(async () => {
  await vocab?.close();
});

describe("RemoteCloser", () => {
  // An array of digits: it can go on for ever, so only the closing ends it within a budget.
  const GBNF = 'root ::= "[" ws num ("," ws num)* ws "]"\nnum ::= [0-9]\nws ::= [ ]?';

  const tok = (s: string) => {
    const ids = vocab.tokenize(s, false);
    assert.equal(ids.length, 1, `${JSON.stringify(s)} is one token`);
    return ids[0]!;
  };
  const closer = async (budget: number) => new RemoteCloser(vocab.llama, vocab.model, await vocab.llama.createGrammar({grammar: GBNF}), classes, vocab.size, budget);

  test("not due until the tokens left come within reach of what is open; then the closer wins over a likelier comma", async () => {
    const c = await closer(40);
    c.accept(tok("["));
    c.accept(tok("1"));
    assert.equal(c.due, false, "38 tokens left for one open level");
    for (let i = 0; i < 10; i++) {
      c.accept(tok(","));
      c.accept(tok("2"));
    }
    assert.equal(c.due, true, "18 tokens left: within 6 per level + 12");
    const choice = c.choose([{id: tok(","), logprob: -0.1}, {id: tok("3"), logprob: -0.5}, {id: tok("]"), logprob: -6}]);
    assert.equal(choice, tok("]"));
  });

  test("only tokens the grammar allows are taken; none allowed among the candidates: an allowed one is found in the vocabulary", async () => {
    const c = await closer(10);
    c.accept(tok("["));
    assert.equal(c.due, true);
    // After "[" only a digit or a space may come: "]" is a closer but not allowed yet.
    assert.equal(c.choose([{id: tok("]"), logprob: -0.1}, {id: tok("7"), logprob: -3}]), tok("7"));
    const found = c.choose([{id: tok("]"), logprob: -0.1}, {id: tok("x"), logprob: -0.2}]);
    assert.match(vocab.detokenize([found], false), /^[0-9]$/, "a digit: the only kind of token the grammar takes after \"[\" besides a space, which closing never picks");
  });

  test("a token the grammar refuses does not throw: svc stops closing and leaves the reply to the replica", async () => {
    const c = await closer(10);
    c.accept(tok("["));
    assert.equal(c.due, true);
    c.accept(tok("x"));
    assert.equal(c.due, false);
  });
});
