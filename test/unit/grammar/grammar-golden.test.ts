// The JSON-Schema → GBNF compiler against golden grammars: the exact text for each schema, that the text
// loads in the engine's own grammar parser (llama.cpp through node-llama-cpp; no model needed), and that
// the loaded grammar accepts the values it should and rejects the texts it should. Acceptance uses the
// binding's full-match check (`isTextCompatible`, reached through LlamaGrammar's internal `_testText`):
// true only when the whole text is a complete match, so "nothing after the value" is checked too.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, type Llama, type LlamaGrammar} from "node-llama-cpp";
import {compileJsonObject, compileSchema, SchemaCache} from "../../../src/grammar/index.ts";
import {CORPUS} from "../../fixtures/schemas/corpus.ts";
import {GOLDEN} from "../../fixtures/grammar/golden.ts";
import {grammarAcceptsText} from "../../../src/engine/llama/internals.ts";

let llama: Llama;

before(async () => {
  llama = await getLlama({gpu: false, build: "never"});
});
after(async () => {
  await llama?.dispose();
});

function matches(grammar: LlamaGrammar, text: string): boolean {
  return grammarAcceptsText(grammar, text);
}

describe("golden grammars", () => {
  test("the table covers every enforced keyword", () => {
    const text = JSON.stringify(GOLDEN.map((c) => c.schema));
    for (const kw of ["type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
      "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions", "nullable"]) {
      assert.ok(text.includes(`"${kw}"`), `a golden schema uses ${kw}`);
    }
    assert.ok(GOLDEN.length >= 15);
  });

  for (const c of GOLDEN) {
    test(c.name, async () => {
      const compiled = c.schema === null ? compileJsonObject() : compileSchema(c.schema, c.options);
      assert.equal(compiled.gbnf, c.gbnf);
      assert.equal(compiled.rootRule, "root");
      assert.match(compiled.key, /^[0-9a-f]{64}$/);
      const grammar = await llama.createGrammar({grammar: c.gbnf});
      for (const value of c.accepts) {
        const compact = JSON.stringify(value);
        assert.ok(matches(grammar, compact), `accepts ${compact}`);
        if (c.prettyToo !== false) {
          // Line-broken with the most indent a gap allows (a newline and one space), at every depth.
          const pretty = JSON.stringify(value, null, 1).replace(/\n +/g, "\n ");
          assert.ok(matches(grammar, pretty), `accepts line-broken ${pretty}`);
        }
        assert.ok(!matches(grammar, compact + " "), `nothing may follow the value: ${compact}`);
      }
      for (const text of c.rejects) assert.ok(!matches(grammar, text), `rejects ${JSON.stringify(text)}`);
    });
  }
});

describe("grammars the engine loads", () => {
  test("every schema of the structured-output corpus compiles and loads", async () => {
    for (const entry of CORPUS) {
      const {gbnf} = compileSchema(entry.schema);
      await assert.doesNotReject(llama.createGrammar({grammar: gbnf}), entry.name);
    }
  });

  test("whitespace is bounded: one space, or a newline and at most one space or tab, between two tokens", async () => {
    const grammar = await llama.createGrammar({grammar: compileSchema({type: "array", items: {type: "integer"}}).gbnf});
    assert.ok(matches(grammar, "[\n 1,\n\t2\n]"));
    assert.ok(matches(grammar, "[ 1, 2 ]"));
    // Three characters would let a model spend three whitespace-only tokens in a row.
    assert.ok(!matches(grammar, "[\n  1]"), "newline and two spaces");
    assert.ok(!matches(grammar, "[  1]"), "two spaces");
    assert.ok(!matches(grammar, "[\n\n1]"), "two newlines");
  });

  test("bounds above llama.cpp's repetition limit of 2000: split into counts it accepts, or left open", async () => {
    const split = compileSchema({type: "string", minLength: 1000, maxLength: 2500}).gbnf;
    assert.equal(split.split("\n")[0], 'root ::= "\\"" char{1000} char{0,1500} "\\""');
    const exact = await llama.createGrammar({grammar: split});
    assert.ok(matches(exact, JSON.stringify("a".repeat(2500))));
    assert.ok(!matches(exact, JSON.stringify("a".repeat(2501))));
    assert.ok(!matches(exact, JSON.stringify("a".repeat(999))));

    const {gbnf} = compileSchema({type: "string", minLength: 4500, maxLength: 9000});
    assert.equal(gbnf.split("\n")[0], 'root ::= "\\"" char{2000} char{2000} char{500,} "\\""');
    const grammar = await llama.createGrammar({grammar: gbnf});
    assert.ok(matches(grammar, JSON.stringify("a".repeat(4500))));
    assert.ok(!matches(grammar, JSON.stringify("a".repeat(4499))));
    assert.ok(matches(grammar, JSON.stringify("a".repeat(9001))), "a maximum more than 2000 above the minimum is not enforced");
  });

  test("large repeated groups are moved into rules of their own, so llama.cpp's rules-times-count check passes", async () => {
    const schema = {type: "array", items: {type: "string", maxLength: 2000}, minItems: 1, maxItems: 1999};
    const {gbnf} = compileSchema(schema);
    assert.match(gbnf, /^root-part ::= "," ws string-0-2000$/m);
    const grammar = await llama.createGrammar({grammar: gbnf});
    assert.ok(matches(grammar, JSON.stringify(["a", "b"])));
  });

  test("a wide object with long key names: 300 optional properties and extra keys", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 300; i++) properties[`property_number_${i}`] = {type: "string", maxLength: 100};
    const {gbnf} = compileSchema({type: "object", properties, required: ["property_number_150"]}, {maxMs: 5000}); // not a timing test
    const grammar = await llama.createGrammar({grammar: gbnf});
    assert.ok(matches(grammar, '{"property_number_7":"x","property_number_150":"y","property_number_7x":1}'));
    assert.ok(!matches(grammar, '{"property_number_150":"y","property_number_7":"x"}'), "listed keys keep schema order");
    assert.ok(!matches(grammar, '{"property_number_150":"y","zz":1,"property_number_299":"x"}'), "extra keys come last and never repeat a listed one");
  });

  test("keys and strings with escapes, quotes and non-ASCII text are emitted as proper JSON", async () => {
    const schema = {type: "object", properties: {"say \"hi\"": {const: "a\\b"}, "naïve/✓": {enum: ["\u0007", "😀"]}},
      required: ["say \"hi\"", "naïve/✓"], additionalProperties: false};
    const grammar = await llama.createGrammar({grammar: compileSchema(schema).gbnf});
    assert.ok(matches(grammar, JSON.stringify({"say \"hi\"": "a\\b", "naïve/✓": "\u0007"})));
    assert.ok(matches(grammar, JSON.stringify({"say \"hi\"": "a\\b", "naïve/✓": "😀"})));
    assert.ok(!matches(grammar, JSON.stringify({"say \"hi\"": "a\\b", "naïve/✓": "x"})));
  });

  test("a SchemaCache entry is the same grammar compileSchema prints", () => {
    const cache = new SchemaCache();
    for (const c of GOLDEN) if (c.schema !== null) assert.equal(cache.get(c.schema, c.options).gbnf, c.gbnf, c.name);
  });
});
