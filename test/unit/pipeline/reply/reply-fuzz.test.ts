// Randomised texts stitched from syntax fragments, near-misses and plain text: whatever the model
// writes, the parser must not throw, must fold to the same result however the text is chunked, must
// give every call arguments that parse as JSON, and must never show call syntax in content.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {seededRandom} from "../../../../src/engine/logit-sampler.ts";
import {ReplyParser, type ReplyParserOptions, type ReplyPart} from "../../../../src/pipeline/reply/index.ts";
import {syntaxOf, type SyntaxName} from "./helpers/syntaxes.ts";

/** The sampler's seeded PRNG (mulberry32), so random chunkings are reproducible. */
const rng = seededRandom;

const FRAGMENTS = [
  "<tool_call>", "</tool_call>", "<function=get_weather>", "<function=", "</function>", "<parameter=city>",
  "<parameter=days>", "<parameter=x>", "</parameter>", "</param", "<think>", "</think>", "</thi", "{", "}", "[", "]",
  '"', "\\", "\\u00", ",", ":", '"name": "get_weather"', '"arguments": ', '{"tool_calls": [', "\n", " ", "\n\n", "abc",
  "12", "true", "é😀", "<", "</", "<tool", '{"name": "get_weather", "arguments": {"city": "Pa', '"days": 3', "None",
];
const TOOLS = [{name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}}}];
const THINK = {open: "<think>", close: "</think>", startsInside: false};

function randomText(rand: () => number): string {
  let s = "";
  const n = Math.floor(rand() * 30);
  for (let i = 0; i < n; i++) s += FRAGMENTS[Math.floor(rand() * FRAGMENTS.length)];
  return s;
}

function run(opts: ReplyParserOptions, chunks: string[]): {parts: ReplyPart[]; folded: unknown} {
  const p = new ReplyParser(opts);
  const parts = [...chunks.flatMap((c) => p.push(c)), ...p.finish()];
  let reasoning = "";
  let content = "";
  const calls: {name: string; args: string; complete?: boolean}[] = [];
  for (const part of parts) {
    if (part.kind === "reasoning") reasoning += part.text;
    else if (part.kind === "content") content += part.text;
    else if (part.kind === "call_start") calls[part.index] = {name: part.name, args: ""};
    else if (part.kind === "call_args") calls[part.index]!.args += part.text;
    else if (part.kind === "call_end") calls[part.index]!.complete = part.complete;
  }
  return {parts, folded: {reasoning, content, calls}};
}

const CONFIGS: {syntax: SyntaxName | null; reasoning: typeof THINK | null}[] = [];
for (const syntax of [null, "hermes", "qwen-xml", "generic"] as const) {
  for (const reasoning of [null, THINK, {...THINK, startsInside: true}]) CONFIGS.push({syntax, reasoning});
}

describe("ReplyParser fuzz", () => {
  for (const config of CONFIGS) {
    test(`syntax ${config.syntax}, reasoning ${config.reasoning ? (config.reasoning.startsInside ? "inside" : "think") : "none"}`, () => {
      const rand = rng(7);
      const opts: ReplyParserOptions = {calls: syntaxOf(config.syntax), reasoning: config.reasoning, tools: TOOLS};
      const banned = config.syntax === "qwen-xml" ? ["<tool_call>", "</tool_call>", "<function="]
        : config.syntax === "hermes" ? ["<tool_call>", "</tool_call>"] : [];
      for (let k = 0; k < 150; k++) {
        const text = randomText(rand);
        const whole = run(opts, [text]);
        const chunks: string[] = [];
        for (let i = 0; i < text.length; ) {
          const n = 1 + Math.floor(rand() * 6);
          chunks.push(text.slice(i, i + n));
          i += n;
        }
        const what = `text ${JSON.stringify(text)}`;
        assert.deepEqual(run(opts, text.split("")).folded, whole.folded, `per char, ${what}`);
        assert.deepEqual(run(opts, chunks).folded, whole.folded, `chunks, ${what}`);
        const folded = whole.folded as {content: string; calls: {args: string; complete?: boolean}[]};
        for (const call of folded.calls) {
          assert.doesNotThrow(() => JSON.parse(call.args), `arguments ${call.args}, ${what}`);
          assert.equal(typeof call.complete, "boolean", `call not ended, ${what}`);
        }
        for (const marker of banned) assert.ok(!folded.content.includes(marker), `content shows ${marker}, ${what}`);
      }
    });
  }
});
