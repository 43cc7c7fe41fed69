// The pythonic call region (LFM2's `[name(key=value, ...)]<|tool_call_end|>`), driven as the reply parser drives
// it: text offered in chunks, what is not consumed offered again with the next chunk, a final feed, then finish()
// if the region is still open. Every text is fed whole, one char at a time and in seeded random chunkings, and all
// of them must give the same calls and consume the same text.

import {test} from "node:test";
import assert from "node:assert/strict";
import type {ReplyPart} from "../../../src/syntax/reply/parts.ts";
import {CallEmitter, PartSink} from "../../../src/syntax/reply/sink.ts";
import {PythonicCallsRegion} from "../../../src/syntax/pythonic/region.ts";

const CLOSE = "<|tool_call_end|>";

interface Call {
  name: string;
  args: unknown;
  complete: boolean;
}

interface Run {
  calls: Call[];
  /** Each call's arguments JSON text, as its fragments concatenate. */
  texts: string[];
  consumed: number;
  /** The region ended by itself (not through finish()). */
  ended: boolean;
}

/** Feeds `chunks` as the reply parser does and collects what the region emitted. */
function drive(chunks: string[]): Run {
  const sink = new PartSink();
  const calls = new CallEmitter(sink);
  const region = new PythonicCallsRegion(calls, CLOSE);
  const parts: ReplyPart[] = [];
  const total = chunks.join("").length;
  let buffer = "";
  let left = "";
  const feed = (final: boolean): void => {
    const n = region.feed(buffer, final);
    assert.ok(n >= 0 && n <= buffer.length, `feed consumed ${n} of ${buffer.length}`);
    buffer = buffer.slice(n);
    parts.push(...sink.take());
  };
  for (let k = 0; k < chunks.length; k++) {
    buffer += chunks[k];
    feed(false);
    if (region.ended) {
      left = buffer + chunks.slice(k + 1).join("");
      break;
    }
  }
  let ended = region.ended;
  if (!region.ended) {
    feed(true);
    ended = region.ended;
    left = buffer;
    if (!region.ended) region.finish();
    parts.push(...sink.take());
  }
  return {...collect(parts), consumed: total - left.length, ended};
}

function collect(parts: ReplyPart[]): {calls: Call[]; texts: string[]} {
  const names: string[] = [];
  const texts: string[] = [];
  const complete: (boolean | undefined)[] = [];
  for (const p of parts) {
    if (p.kind === "call_start") {
      assert.equal(p.index, names.length, "calls start in order");
      names.push(p.name);
      texts.push("");
    } else if (p.kind === "call_args") {
      assert.equal(complete[p.index], undefined, "no arguments after a call's end");
      texts[p.index] += p.text;
    } else if (p.kind === "call_end") {
      assert.equal(complete[p.index], undefined, "a call ends once");
      complete[p.index] = p.complete;
    } else {
      assert.fail(`unexpected part ${p.kind}`);
    }
  }
  const calls = names.map((name, i) => {
    assert.notEqual(complete[i], undefined, `call ${i} ended`);
    let args: unknown;
    assert.doesNotThrow(() => (args = JSON.parse(texts[i]!)), `call ${i} arguments are JSON: ${texts[i]}`);
    return {name, args, complete: complete[i]!};
  });
  return {calls, texts};
}

/** A small seeded generator, so a failing chunking can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function chunkings(text: string): [string, string[]][] {
  // "units" splits every UTF-16 unit, so an emoji arrives in halves.
  const out: [string, string[]][] = [["whole", [text]], ["chars", [...text]], ["units", text.split("")]];
  for (const seed of [1, 7, 42, 1234, 99999]) {
    const next = random(seed);
    const chunks: string[] = [];
    for (let i = 0; i < text.length; ) {
      const n = 1 + Math.floor(next() * 9);
      chunks.push(text.slice(i, i + n));
      i += n;
    }
    out.push([`seed ${seed}`, chunks]);
  }
  return out;
}

/** Runs every chunking of `text`; they must agree. Returns the run. */
function parse(text: string): Run {
  let first: Run | null = null;
  for (const [label, chunks] of chunkings(text)) {
    const run = drive(chunks);
    if (first === null) first = run;
    else assert.deepEqual(run, first, `chunking "${label}" differs from feeding ${JSON.stringify(text)} whole`);
  }
  return first!;
}

/** `text` gives exactly these calls (complete unless said) and consumes `consumed` chars (default: all of it). */
function expectCalls(text: string, calls: [string, unknown, boolean?][], consumed = text.length): Run {
  const run = parse(text);
  assert.deepEqual(run.calls, calls.map(([name, args, complete]) => ({name, args, complete: complete ?? true})));
  assert.equal(run.consumed, consumed, `consumed of ${JSON.stringify(text)}`);
  return run;
}

test("one call: name, arguments and the whole text up to the close marker", () => {
  const run = expectCalls(`[get_weather(city="Paris", days=2)]${CLOSE}`, [["get_weather", {city: "Paris", days: 2}]]);
  assert.deepEqual(run.texts, ['{"city": "Paris", "days": 2}']);
  assert.equal(run.ended, true);
});

test("two calls, with Python and JSON values mixed", () => {
  const text = `[get_weather(city="Paris", days=2), get_time(tz='Europe/Paris', exact=True, opts={"a": [1, 2.5, None]})]${CLOSE}`;
  const run = expectCalls(text, [
    ["get_weather", {city: "Paris", days: 2}],
    ["get_time", {tz: "Europe/Paris", exact: true, opts: {a: [1, 2.5, null]}}],
  ]);
  assert.equal(run.texts[1], '{"tz": "Europe/Paris", "exact": true, "opts": {"a": [1, 2.5, null]}}');
});

test("a call without arguments gives {}; an empty list gives no calls", () => {
  expectCalls(`[f()]${CLOSE}`, [["f", {}]]);
  expectCalls(`[f( \n )]${CLOSE}`, [["f", {}]]);
  expectCalls(`[a(), b()]${CLOSE}`, [["a", {}], ["b", {}]]);
  const run = expectCalls(`[]${CLOSE}`, []);
  assert.equal(run.ended, true);
});

test("tool names keep dots, dashes, underscores and digits", () => {
  expectCalls(`[functions.get-weather_2(x=1)]${CLOSE}`, [["functions.get-weather_2", {x: 1}]]);
});

test("nested dicts, lists and tuples, empty ones and trailing commas", () => {
  const text = `[f(opts={"a": [1, {"b": (2, 3)}], 'c': {}, "d": [[], ()]}, t=(1,), e=[], u=(), l=[1, 2,], m={'k': 'v',})]${CLOSE}`;
  expectCalls(text, [["f", {opts: {a: [1, {b: [2, 3]}], c: {}, d: [[], []]}, t: [1], e: [], u: [], l: [1, 2], m: {k: "v"}}]]);
  expectCalls(`[f(x=[[[[{"deep": [({'er': None},)]}]]]])]${CLOSE}`, [["f", {x: [[[[{deep: [[{er: null}]]}]]]]}]]);
});

test("single and double quotes with Python escapes become JSON strings", () => {
  const text = String.raw`[f(a='it\'s', b="say \"hi\"", c='a"b', d='\u00e9', e='\x41', f='\\', g='tab\there\nline', ` +
    String.raw`h='\U0001F600', i='\q', j='\101', k="it's", l='\r\b\f\a\v', m='\0')]` + CLOSE;
  expectCalls(text, [["f", {
    a: "it's", b: 'say "hi"', c: 'a"b', d: "é", e: "A", f: "\\", g: "tab\there\nline",
    h: "😀", i: "\\q", j: "A", k: "it's", l: "\r\b\f\x07\x0b", m: "\0",
  }]]);
  // A surrogate pair written as two \u escapes is one character again.
  expectCalls(String.raw`[f(s='\ud83d\ude00', t=(1))]` + CLOSE, [["f", {s: "😀", t: [1]}]]);
});

test("the JSON text is escaped as JSON wants: quotes, control chars; non-ASCII kept as is", () => {
  // A raw emoji is two UTF-16 units: chunkings that split it between them still write it as is.
  const run = expectCalls(`[f(a='a"b', b='it\\'s', c="x\ty", d='café 😀😀', e='line\nbreak')]${CLOSE}`,
    [["f", {a: 'a"b', b: "it's", c: "x\ty", d: "café 😀😀", e: "line\nbreak"}]]);
  assert.equal(run.texts[0], '{"a": "a\\"b", "b": "it\'s", "c": "x\\ty", "d": "café 😀😀", "e": "line\\nbreak"}');
});

test("a backslash-newline inside a string continues the line", () => {
  expectCalls(`[f(s='one \\\ntwo')]${CLOSE}`, [["f", {s: "one two"}]]);
});

test("True/False/None and true/false/null", () => {
  expectCalls(`[f(a=True, b=False, c=None, d=true, e=false, f=null, g=[True, None])]${CLOSE}`,
    [["f", {a: true, b: false, c: null, d: true, e: false, f: null, g: [true, null]}]]);
});

test("numbers: negative, float, exponent, and Python spellings JSON lacks", () => {
  const run = expectCalls(`[f(a=-3, b=2.5, c=1e-3, d=-0.5, e=+4, f=.5, g=5., h=1_000, i=-2E+3, j=0, k=12345678901234567890)]${CLOSE}`,
    [["f", {a: -3, b: 2.5, c: 0.001, d: -0.5, e: 4, f: 0.5, g: 5, h: 1000, i: -2000, j: 0, k: 12345678901234567890}]]);
  assert.match(run.texts[0]!, /"k": 12345678901234567890\}$/, "a big int keeps its digits");
  assert.match(run.texts[0]!, /"f": 0\.5, "g": 5\.0, "h": 1000,/);
});

test("whitespace and newlines everywhere", () => {
  const text = `\n  [ \n get_weather ( city = "Paris" ,\n days = 2 , ) ,\n\t get_time( tz\t=\t'UTC' ) \n ] \n ${CLOSE}`;
  expectCalls(text, [["get_weather", {city: "Paris", days: 2}], ["get_time", {tz: "UTC"}]]);
  expectCalls(`[f(d={ "a" : [ 1 , 2 ] , 'b' : ( None , ) })]${CLOSE}`, [["f", {d: {a: [1, 2], b: [null]}}]]);
});

test("missing brackets: bare calls are read, up to the close marker", () => {
  expectCalls(`get_weather(city="Paris")${CLOSE}`, [["get_weather", {city: "Paris"}]]);
  expectCalls(` a(x=1), b(y=2) ${CLOSE}`, [["a", {x: 1}], ["b", {y: 2}]]);
  // A list whose `]` was left out still ends at the close marker.
  expectCalls(`[a(x=1)${CLOSE}`, [["a", {x: 1}]]);
});

test("missing close marker: the calls are complete and what follows is content", () => {
  expectCalls(`[f(x=1)]`, [["f", {x: 1}]]);
  expectCalls(`[f(x=1)]\nThe weather is fine.`, [["f", {x: 1}]], `[f(x=1)]`.length);
  expectCalls(`f(x=1) and then some text`, [["f", {x: 1}]], `f(x=1)`.length);
  expectCalls(`[f(x=1), g()`, [["f", {x: 1}], ["g", {}]]);
});

test("text after the close marker is not consumed", () => {
  const head = `[f(x=1)]${CLOSE}`;
  const run = expectCalls(`${head}Done.`, [["f", {x: 1}]], head.length);
  assert.equal(run.ended, true);
  expectCalls(`${head}<|tool_call_start|>[g()]${CLOSE}`, [["f", {x: 1}]], head.length);
  expectCalls(`f(x=1)  ${CLOSE}  after`, [["f", {x: 1}]], `f(x=1)  ${CLOSE}`.length);
});

test("a bare name as a value is malformed: incomplete call, valid JSON, dropped up to the close marker", () => {
  const head = `[get_weather(city=Paris)]${CLOSE}`;
  const run = expectCalls(`${head}after`, [["get_weather", {city: null}, false]], head.length);
  assert.equal(run.ended, true);
});

test("a positional argument is malformed", () => {
  const head = `[f("x")]${CLOSE}`;
  expectCalls(`${head} tail`, [["f", {}, false]], head.length);
  expectCalls(`[f(a=1, x)]${CLOSE}`, [["f", {a: 1, x: null}, false]]);
});

test("a later malformed call leaves the earlier ones complete", () => {
  const head = `[a(x=1), b(y=)]${CLOSE}`;
  expectCalls(`${head}rest`, [["a", {x: 1}], ["b", {y: null}, false]], head.length);
  expectCalls(`[a(x=1) b()]${CLOSE}`, [["a", {x: 1}]]);
});

test("cut at the end of the generation: the open call is closed best-effort as incomplete", () => {
  expectCalls(`[f(a="x", b="unterminated`, [["f", {a: "x", b: "unterminated"}, false]]);
  expectCalls(`[f(d={"ke`, [["f", {d: {ke: null}}, false]]);
  expectCalls(`[f(d={"k": [1, 2`, [["f", {d: {k: [1, 2]}}, false]]);
  expectCalls(`[f(a=`, [["f", {a: null}, false]]);
  expectCalls(`[f(ab`, [["f", {ab: null}, false]]);
  expectCalls(`[f(a=1,`, [["f", {a: 1}, false]]);
  expectCalls(`[f(a=Tru`, [["f", {a: null}, false]]);
  expectCalls(`[f(a=12`, [["f", {a: 12}, false]]);
  expectCalls(`[f(s='a\\`, [["f", {s: "a"}, false]]);
});

test("the close marker inside an unterminated string ends the call there", () => {
  const head = `[f(s="abc${CLOSE}`;
  expectCalls(`${head}tail`, [["f", {s: "abc"}, false]], head.length);
  // Right after a backslash too: the marker is not read as an escape.
  expectCalls(`[f(s='a\\${CLOSE}tail`, [["f", {s: "a"}, false]], `[f(s='a\\${CLOSE}`.length);
});

test("other malformed text: no call, dropped up to the close marker", () => {
  expectCalls(`hello world${CLOSE}x`, [], `hello world${CLOSE}`.length);
  expectCalls(`[${"n".repeat(65)}(x=1)]${CLOSE}`, []);
  expectCalls(`[f(d={1: 2})]${CLOSE}`, [["f", {d: {}}, false]]);
  expectCalls(`[f(s='\\xZZ')]${CLOSE}`, [["f", {s: ""}, false]]);
  expectCalls(`[f(a=1 b=2)]${CLOSE}`, [["f", {a: 1}, false]]);
  expectCalls(`[f(a=[1, 2})]${CLOSE}`, [["f", {a: [1, 2]}, false]]);
  // With no close marker the rest of the generation is dropped.
  expectCalls(`[f(x=?)] more`, [["f", {x: null}, false]]);
});

/** One region, fed by hand: [chars consumed, parts] per feed. */
function stepper(): {feed: (text: string, final?: boolean) => [number, ReplyPart[]]; region: PythonicCallsRegion} {
  const sink = new PartSink();
  const region = new PythonicCallsRegion(new CallEmitter(sink), CLOSE);
  return {region, feed: (text, final = false) => [region.feed(text, final), sink.take()]};
}

test("a partial close marker at a chunk end is held back until it is decided", () => {
  const r = stepper();
  const [n, parts] = r.feed(`[f(x=1)]<|tool_`);
  assert.equal(n, `[f(x=1)]`.length);
  assert.equal(r.region.ended, false);
  assert.deepEqual(parts.at(-1), {kind: "call_end", index: 0, complete: true});
  const [m] = r.feed(`<|tool_call_end|>Hi`);
  assert.equal(m, CLOSE.length);
  assert.equal(r.region.ended, true);

  // Not the marker after all: the region ends after `]` and the text is content.
  const s = stepper();
  s.feed(`[f(x=1)]`);
  assert.equal(s.feed(`<|tool_`)[0], 0);
  assert.equal(s.feed(`<|tool_x`)[0], 0);
  assert.equal(s.region.ended, true);

  // At the end of the generation a partial marker is not held: the region ends and leaves it.
  const t = stepper();
  assert.equal(t.feed(`[f(x=1)]<|tool_`, true)[0], `[f(x=1)]`.length);
  assert.equal(t.region.ended, true);
});

test("junk holds a partial close marker too", () => {
  const r = stepper();
  const [n] = r.feed(`[f(x=Paris)] junk <|tool_ca`);
  assert.equal(n, `[f(x=Paris)] junk `.length);
  assert.equal(r.region.ended, false);
  assert.equal(r.feed(`<|tool_call_end|>after`)[0], CLOSE.length);
  assert.equal(r.region.ended, true);
});

test("string contents stream before the string closes; undecided tokens wait", () => {
  const r = stepper();
  const [n, parts] = r.feed(`[f(s="hello wor`);
  assert.equal(n, `[f(s="hello wor`.length);
  assert.deepEqual(parts, [
    {kind: "call_start", index: 0, name: "f"},
    {kind: "call_args", index: 0, text: '{"s": "hello wor'},
  ]);
  const [, more] = r.feed(`ld", flag=Tru`);
  assert.deepEqual(more, [{kind: "call_args", index: 0, text: 'ld", "flag": '}], "`Tru` is not released yet");
  const [, last] = r.feed(`e)]${CLOSE}`);
  assert.deepEqual(last, [
    {kind: "call_args", index: 0, text: "true}"},
    {kind: "call_end", index: 0, complete: true},
  ]);
  assert.equal(r.region.ended, true);
});

test("a split escape is held until its chars arrive", () => {
  const r = stepper();
  assert.equal(r.feed(`[f(s='a\\`)[0], `[f(s='a`.length);
  assert.equal(r.feed(`\\u00`)[0], 0, "\\u with two of its four digits waits");
  const [n, parts] = r.feed(`\\u00e9')]${CLOSE}`);
  assert.equal(n, `\\u00e9')]${CLOSE}`.length);
  assert.deepEqual(parts[0], {kind: "call_args", index: 0, text: "é\"}"});
});

test("finish() inside a call ends it incomplete with closed arguments", () => {
  const r = stepper();
  r.feed(`[a(x=1), b(opts={"k": [1, "tw`);
  r.region.finish();
  assert.equal(r.region.ended, true);
  const sink = new PartSink();
  const emitter = new CallEmitter(sink);
  const region = new PythonicCallsRegion(emitter, CLOSE);
  region.feed(`[a(x=1), b(opts={"k": [1, "tw`, false);
  region.finish();
  const {calls} = collect(sink.take());
  assert.deepEqual(calls, [
    {name: "a", args: {x: 1}, complete: true},
    {name: "b", args: {opts: {k: [1, "tw"]}}, complete: false},
  ]);
  assert.equal(emitter.completed, 1);
  assert.deepEqual([...emitter.incomplete], [1]);
});
