// Table-driven reply-parser cases. Every case is fed whole, one char at a time and in seeded random
// chunkings; all must fold to the same reasoning, content and calls, and content must never show syntax.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {seededRandom} from "../../../../src/engine/logit-sampler.ts";
import {ReplyParser, type ReasoningMarkers, type ReplyParserOptions, type ReplyPart, type ToolSpec}
  from "../../../../src/pipeline/reply/index.ts";
import {syntaxOf, type SyntaxName} from "./helpers/syntaxes.ts";

interface Folded {
  reasoning: string;
  content: string;
  calls: {name: string; arguments: string; complete: boolean}[];
}

/** The sampler's seeded PRNG (mulberry32), so random chunkings are reproducible. */
const rng = seededRandom;

/** Chunkings every case is fed in: whole, one UTF-16 unit at a time, and seeded random sizes 1..9. */
function chunkings(text: string): {label: string; chunks: string[]}[] {
  const out = [
    {label: "whole", chunks: [text]},
    {label: "per char", chunks: [...text.split("")]},
  ];
  for (const seed of [1, 2, 3, 42, 1234]) {
    const rand = rng(seed);
    const chunks: string[] = [];
    for (let i = 0; i < text.length; ) {
      const n = 1 + Math.floor(rand() * 9);
      chunks.push(text.slice(i, i + n));
      i += n;
    }
    out.push({label: `random seed ${seed}`, chunks});
  }
  return out;
}

/** Runs one chunking; asserts the part-stream invariants along the way. */
function runChunks(opts: ReplyParserOptions, chunks: readonly string[]): {folded: Folded; parser: ReplyParser} {
  const parser = new ReplyParser(opts);
  const batches: ReplyPart[][] = chunks.map((c) => parser.push(c));
  batches.push(parser.finish());
  for (const batch of batches) assertMerged(batch);
  return {folded: fold(batches.flat()), parser};
}

function assertMerged(batch: readonly ReplyPart[]): void {
  for (let i = 1; i < batch.length; i++) {
    const a = batch[i - 1]!;
    const b = batch[i]!;
    const sameText = (a.kind === "reasoning" || a.kind === "content") && a.kind === b.kind;
    const sameArgs = a.kind === "call_args" && b.kind === "call_args" && a.index === b.index;
    assert.ok(!sameText && !sameArgs, `unmerged neighbours in one push: ${JSON.stringify([a, b])}`);
  }
  for (const p of batch) {
    if ("text" in p) assert.notEqual(p.text, "", "empty text part");
  }
}

function fold(parts: readonly ReplyPart[]): Folded {
  const out: Folded = {reasoning: "", content: "", calls: []};
  let open: number | null = null;
  for (const p of parts) {
    switch (p.kind) {
      case "reasoning":
        out.reasoning += p.text;
        break;
      case "content":
        out.content += p.text;
        break;
      case "call_start":
        assert.equal(open, null, "call_start while another call is open");
        assert.equal(p.index, out.calls.length, "call indexes count from 0 in order");
        out.calls.push({name: p.name, arguments: "", complete: false});
        open = p.index;
        break;
      case "call_args":
        assert.equal(p.index, open, "call_args outside its call");
        out.calls[p.index]!.arguments += p.text;
        break;
      case "call_end":
        assert.equal(p.index, open, "call_end for a call that is not open");
        out.calls[p.index]!.complete = p.complete;
        open = null;
        break;
    }
  }
  assert.equal(open, null, "a call was never ended");
  return out;
}

const TOOLS: ToolSpec[] = [
  {name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}}},
  {
    name: "configure",
    parameters: {type: "object", properties: {
      enabled: {type: "boolean"}, ratio: {type: "number"}, opts: {type: "object"}, tags: {type: "array"},
      mode: {enum: ["fast", "slow"]}, note: {type: ["string"]}, maybe: {type: ["string", "null"]}, code: {type: "string"},
    }},
  },
];
const THINK: ReasoningMarkers = {open: "<think>", close: "</think>", startsInside: false};
const INSIDE: ReasoningMarkers = {...THINK, startsInside: true};

interface Case {
  name: string;
  syntax?: SyntaxName | null;
  reasoning?: ReasoningMarkers | null;
  text: string;
  reasoningOut?: string;
  content?: string;
  calls?: {name: string; args: unknown; complete?: boolean}[];
  /** Content legitimately shows a marker (e.g. <think> not at the reply start). */
  markersInContent?: boolean;
}

const xml = (name: string, params: [string, string][]) =>
  `<tool_call>\n<function=${name}>\n${params.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>\n</tool_call>`;
const hermes = (obj: unknown) => `<tool_call>\n${JSON.stringify(obj)}\n</tool_call>`;
const weather = (city: string, days?: number) => ({name: "get_weather", arguments: days === undefined ? {city} : {city, days}});
const TRICKY = 'He said "hi" \\ C:\\dir\\n\n\tline2 😀 é \u0001 </param';
const XML_HEAD = "<tool_call>\n<function=get_weather>\n";
const HERMES_HEAD = '<tool_call>\n{"name": "get_weather", "arguments": ';

const CASES: Case[] = [
  // Plain text and near-misses.
  {name: "plain text", text: "Hello, world!\nSecond line.", content: "Hello, world!\nSecond line."},
  {name: "angle brackets and <tool that is not a call (hermes)", syntax: "hermes",
    text: "a < b, <b>bold</b>, <tool that is not, <tool_calls> no <tool_call ",
    content: "a < b, <b>bold</b>, <tool that is not, <tool_calls> no <tool_call "},
  {name: "near-miss tags (qwen-xml)", syntax: "qwen-xml", text: "x <function y> <func\n", content: "x <function y> <func\n"},
  {name: "syntax null leaves <tool_call> as content", syntax: null,
    text: hermes(weather("Paris")), content: hermes(weather("Paris")), markersInContent: true},
  {name: "stray </tool_call> is dropped", syntax: "hermes", text: "a</tool_call>b", content: "ab"},
  // Thinking.
  {name: "think closed", reasoning: THINK, text: "<think>\nabc\n</think>\n\nAnswer", reasoningOut: "abc", content: "Answer"},
  {name: "think after whitespace, no newlines", reasoning: THINK, text: "\n <think>x</think>y", reasoningOut: "x", content: "y"},
  {name: "think keeps inner blank lines", reasoning: THINK, text: "<think>\n\nl1\n\nl2\n\n</think>\n\n\nA\n\nB\n",
    reasoningOut: "l1\n\nl2", content: "A\n\nB\n"},
  {name: "think unclosed", reasoning: THINK, text: "<think>\nstill thinking\n", reasoningOut: "still thinking", content: ""},
  {name: "think empty", reasoning: THINK, text: "<think>\n\n</think>\n\nHello", reasoningOut: "", content: "Hello"},
  {name: "think with a near-miss close", reasoning: THINK, text: "<think>a </thinx b</think>c", reasoningOut: "a </thinx b", content: "c"},
  {name: "startsInside", reasoning: INSIDE, text: "abc\n</think>\n\nAnswer", reasoningOut: "abc", content: "Answer"},
  {name: "startsInside unclosed", reasoning: INSIDE, text: "\njust thinking", reasoningOut: "just thinking"},
  {name: "<think> not at start is content", reasoning: THINK,
    text: "Hi <think>no</think>", content: "Hi <think>no</think>", markersInContent: true},
  {name: "<thought> is not <think>", reasoning: THINK, text: "<thought>hi", content: "<thought>hi"},
  {name: "think then hermes call", syntax: "hermes", reasoning: THINK,
    text: `<think>\nI should call.\n</think>\n\n${hermes(weather("Oslo"))}`,
    reasoningOut: "I should call.", calls: [{name: "get_weather", args: {city: "Oslo"}}]},
  // qwen-xml.
  {name: "xml one call", syntax: "qwen-xml", text: xml("get_weather", [["city", "Paris"], ["days", "3"]]),
    calls: [{name: "get_weather", args: {city: "Paris", days: 3}}]},
  {name: "xml two calls", syntax: "qwen-xml", text: `${xml("get_weather", [["city", "Paris"]])}\n${xml("get_weather", [["city", "Rome"]])}`,
    calls: [{name: "get_weather", args: {city: "Paris"}}, {name: "get_weather", args: {city: "Rome"}}]},
  {name: "xml call after content, content after call", syntax: "qwen-xml",
    text: `Let me check.\n\n${xml("get_weather", [["city", "Paris"]])}\n\nDone.`,
    content: "Let me check.\n\nDone.", calls: [{name: "get_weather", args: {city: "Paris"}}]},
  {name: "xml string escapes", syntax: "qwen-xml",
    text: xml("get_weather", [["city", TRICKY]]), calls: [{name: "get_weather", args: {city: TRICKY}}]},
  {name: "xml typed values", syntax: "qwen-xml",
    text: xml("configure", [["enabled", "true"], ["ratio", "0.5"], ["opts", '{"a": [1, 2]}'], ["tags", '["x",\n "y"]'],
      ["mode", "fast"], ["note", "123"], ["maybe", "null"], ["code", "if (a) {\n  f(</function>);\n}"]]),
    calls: [{name: "configure", args: {enabled: true, ratio: 0.5, opts: {a: [1, 2]}, tags: ["x", "y"], mode: "fast", note: "123",
      maybe: null, code: "if (a) {\n  f(</function>);\n}"}}]},
  {name: "xml empty string values", syntax: "qwen-xml",
    text: `${XML_HEAD}<parameter=city>\n</parameter>\n<parameter=note></parameter>\n</function>\n</tool_call>`,
    calls: [{name: "get_weather", args: {city: "", note: ""}}]},
  {name: "xml only one layout newline is stripped", syntax: "qwen-xml", text: xml("get_weather", [["city", "\nParis\n"]]),
    calls: [{name: "get_weather", args: {city: "\nParis\n"}}]},
  {name: "xml undeclared parameter typing", syntax: "qwen-xml",
    text: xml("other", [["n", "42"], ["f", "true"], ["o", '{"k": "v"}'], ["s", "hello"], ["q", '"quoted"'], ["z", "null"]]),
    calls: [{name: "other", args: {n: 42, f: true, o: {k: "v"}, s: "hello", q: '"quoted"', z: null}}]},
  {name: "xml declared integer that does not parse", syntax: "qwen-xml", text: xml("get_weather", [["days", "three"]]),
    calls: [{name: "get_weather", args: {days: "three"}}]},
  {name: "xml compact form", syntax: "qwen-xml",
    text: "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=days>2</parameter></function></tool_call>",
    calls: [{name: "get_weather", args: {city: "Paris", days: 2}}]},
  {name: "xml bare <function=>", syntax: "qwen-xml", text: "<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\nok",
    content: "ok", calls: [{name: "get_weather", args: {city: "Rome"}}]},
  {name: "xml bare <function= that is not a call", syntax: "qwen-xml", text: "Use <function=\nlater", content: "Use\nlater"},
  {name: "xml </tool_call> without </function>", syntax: "qwen-xml", text: `${XML_HEAD}<parameter=days>\n5\n</parameter>\n</tool_call>`,
    calls: [{name: "get_weather", args: {days: 5}}]},
  {name: "xml unterminated in a string", syntax: "qwen-xml", text: `${XML_HEAD}<parameter=city>\nPar`,
    calls: [{name: "get_weather", args: {city: "Par"}, complete: false}]},
  {name: "xml unterminated at a partial close tag", syntax: "qwen-xml", text: `${XML_HEAD}<parameter=city>\nParis\n</param`,
    calls: [{name: "get_weather", args: {city: "Paris"}, complete: false}]},
  {name: "xml unterminated in a number", syntax: "qwen-xml", text: `${XML_HEAD}<parameter=days>\n4`,
    calls: [{name: "get_weather", args: {days: 4}, complete: false}]},
  {name: "xml unterminated after the name", syntax: "qwen-xml", text: XML_HEAD, calls: [{name: "get_weather", args: {}, complete: false}]},
  {name: "xml cut in the function name", syntax: "qwen-xml", text: "Hi\n<tool_call>\n<function=get_wea", content: "Hi"},
  {name: "xml garbage in <tool_call>", syntax: "qwen-xml", text: "<tool_call>\ngarbage\n</tool_call>\nAfter", content: "After"},
  // hermes.
  {name: "hermes one call", syntax: "hermes",
    text: hermes(weather("Paris", 3)), calls: [{name: "get_weather", args: {city: "Paris", days: 3}}]},
  {name: "hermes two calls, after content", syntax: "hermes", text: `Checking.\n${hermes(weather("A"))}\n${hermes(weather("B"))}\n`,
    content: "Checking.", calls: [{name: "get_weather", args: {city: "A"}}, {name: "get_weather", args: {city: "B"}}]},
  {name: "hermes string escapes", syntax: "hermes", text: hermes(weather(TRICKY)), calls: [{name: "get_weather", args: {city: TRICKY}}]},
  {name: "hermes nested values", syntax: "hermes",
    text: hermes({name: "x", arguments: {a: {b: [1, 2.5e3, true, null, "s"]}, c: [], d: {}}}),
    calls: [{name: "x", args: {a: {b: [1, 2500, true, null, "s"]}, c: [], d: {}}}]},
  {name: "hermes arguments as a JSON string", syntax: "hermes",
    text: hermes({name: "get_weather", arguments: JSON.stringify({city: 'P "q"'})}),
    calls: [{name: "get_weather", args: {city: 'P "q"'}}]},
  {name: "hermes arguments before name, extra keys", syntax: "hermes",
    text: hermes({id: 1, arguments: {city: "X"}, name: "get_weather", type: "f"}),
    calls: [{name: "get_weather", args: {city: "X"}}]},
  {name: "hermes null or missing arguments", syntax: "hermes", text: hermes({name: "a", arguments: null}) + hermes({name: "b"}),
    calls: [{name: "a", args: {}}, {name: "b", args: {}}]},
  {name: "hermes model slips: raw newline, True, trailing comma", syntax: "hermes",
    text: '<tool_call>\n{"name": "x", "arguments": {"s": "a\nb", "t": True, "l": [1,],}}\n</tool_call>',
    calls: [{name: "x", args: {s: "a\nb", t: true, l: [1]}}]},
  {name: "hermes unterminated in a string", syntax: "hermes", text: `${HERMES_HEAD}{"city": "Par`,
    calls: [{name: "get_weather", args: {city: "Par"}, complete: false}]},
  {name: "hermes unterminated after a comma", syntax: "hermes", text: `${HERMES_HEAD}{"days": 1, `,
    calls: [{name: "get_weather", args: {days: 1}, complete: false}]},
  {name: "hermes unterminated after a key", syntax: "hermes", text: `${HERMES_HEAD}{"days": 1, "city"`,
    calls: [{name: "get_weather", args: {days: 1, city: null}, complete: false}]},
  {name: "hermes unterminated in an escape", syntax: "hermes", text: `${HERMES_HEAD}{"city": "x\\u00`,
    calls: [{name: "get_weather", args: {city: "x"}, complete: false}]},
  {name: "hermes unterminated in a number", syntax: "hermes", text: `${HERMES_HEAD}{"days": [12`,
    calls: [{name: "get_weather", args: {days: [12]}, complete: false}]},
  {name: "hermes missing brace, then close tag and content", syntax: "hermes", text: `${HERMES_HEAD}{"city": "Paris"}\n</tool_call>\nok`,
    content: "ok", calls: [{name: "get_weather", args: {city: "Paris"}, complete: false}]},
  {name: "hermes two objects in one tag", syntax: "hermes",
    text: `<tool_call>\n${JSON.stringify(weather("A"))}\n${JSON.stringify(weather("B"))}\n</tool_call>`,
    calls: [{name: "get_weather", args: {city: "A"}}, {name: "get_weather", args: {city: "B"}}]},
  {name: "qwen-xml syntax, JSON written in the tag", syntax: "qwen-xml", text: hermes(weather("J", 1)),
    calls: [{name: "get_weather", args: {city: "J", days: 1}}]},
  {name: "hermes syntax, XML written in the tag", syntax: "hermes", text: xml("get_weather", [["days", "2"]]),
    calls: [{name: "get_weather", args: {days: 2}}]},
  {name: "hermes garbage in <tool_call>", syntax: "hermes", text: "<tool_call>\nnot json\n</tool_call>hi", content: "hi"},
  {name: "hermes cut in the name", syntax: "hermes", text: '<tool_call>\n{"name": "get_wea', content: ""},
  // generic.
  {name: "generic one call", syntax: "generic", text: JSON.stringify({tool_calls: [weather("Paris")]}),
    calls: [{name: "get_weather", args: {city: "Paris"}}]},
  {name: "generic two calls with whitespace", syntax: "generic",
    text: '\n { "tool_calls" : [ {"name": "a", "arguments": {"x": 1}} ,\n {"name": "b", "arguments": {}} ] }\n',
    calls: [{name: "a", args: {x: 1}}, {name: "b", args: {}}]},
  {name: "generic: other JSON is content", syntax: "generic", text: '{"answer": 42}', content: '{"answer": 42}'},
  {name: "generic: near-miss key is content", syntax: "generic", text: '{"tool_callsX": []}', content: '{"tool_callsX": []}'},
  {name: "generic: text is content", syntax: "generic", text: "  Just text.", content: "  Just text."},
  {name: "generic: opener later in the text is content", syntax: "generic",
    text: 'Sure: {"tool_calls": []}', content: 'Sure: {"tool_calls": []}'},
  {name: "generic: empty list", syntax: "generic", text: '{"tool_calls": []}', content: ""},
  {name: "generic: trailing text dropped", syntax: "generic", text: `${JSON.stringify({tool_calls: [weather("Q")]})}\nextra`,
    calls: [{name: "get_weather", args: {city: "Q"}}]},
  {name: "generic unterminated", syntax: "generic", text: '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Pa',
    calls: [{name: "get_weather", args: {city: "Pa"}, complete: false}]},
  {name: "generic after think", syntax: "generic", reasoning: THINK,
    text: `<think>\nhmm\n</think>\n\n${JSON.stringify({tool_calls: [weather("Z")]})}`,
    reasoningOut: "hmm", calls: [{name: "get_weather", args: {city: "Z"}}]},
];

function optionsOf(c: Case): ReplyParserOptions {
  return {calls: syntaxOf(c.syntax), tools: TOOLS, reasoning: c.reasoning ?? null};
}

describe("ReplyParser cases", () => {
  for (const c of CASES) {
    test(c.name, () => {
      let first: Folded | null = null;
      for (const {label, chunks} of chunkings(c.text)) {
        const {folded} = runChunks(optionsOf(c), chunks);
        if (first === null) first = folded;
        else assert.deepEqual(folded, first, `${label} differs from whole`);
        assert.equal(folded.reasoning, c.reasoningOut ?? "", `${label}: reasoning`);
        assert.equal(folded.content, c.content ?? "", `${label}: content`);
        const calls = folded.calls.map((k) => ({name: k.name, args: JSON.parse(k.arguments) as unknown, complete: k.complete}));
        assert.deepEqual(calls, (c.calls ?? []).map((k) => ({...k, complete: k.complete ?? true})), `${label}: calls`);
        if (!c.markersInContent) {
          for (const marker of ["<tool_call>", "</tool_call>", "<function=", "<parameter=", "<think>", "</think>"]) {
            assert.ok(!folded.content.includes(marker), `${label}: content shows ${marker}`);
          }
        }
      }
    });
  }
});
