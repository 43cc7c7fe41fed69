// Stop strings with hold-back, and incremental detokenization that holds split UTF-8 characters.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {StopMatcher} from "../../../src/pipeline/stop-strings.ts";
import {IncrementalDetokenizer} from "../../../src/pipeline/detokenizer.ts";

/** Pushes text one character at a time; returns each step's emit and the first match. */
function byChar(m: StopMatcher, text: string): {emits: string[]; matched: string | null} {
  const emits: string[] = [];
  let matched: string | null = null;
  for (const ch of text) {
    const step = m.push(ch);
    emits.push(step.emit);
    if (step.matched !== null && matched === null) matched = step.matched;
  }
  return {emits, matched};
}

describe("StopMatcher", () => {
  test("char by char with ###: text before is emitted, # and ## are held, the stop is never shown", () => {
    const m = new StopMatcher(["###"]);
    const {emits, matched} = byChar(m, "ab##c###tail");
    assert.deepEqual(emits, ["a", "b", "", "", "##c", "", "", "", "", "", "", ""]);
    assert.equal(matched, "###");
    assert.equal(emits.join(""), "ab##c");
    assert.equal(m.flush(), "");
  });

  test("a partial match that fails later is released in order", () => {
    const m = new StopMatcher(["<|end|>"]);
    const {emits, matched} = byChar(m, "a<|en>b<|end|>c");
    assert.equal(matched, "<|end|>");
    assert.equal(emits.join(""), "a<|en>b");
    // "<|en" is held for four steps and released whole when ">" breaks it.
    assert.deepEqual(emits.slice(0, 7), ["a", "", "", "", "", "<|en>", "b"]);
  });

  test("a held prefix whose own tail starts the stop keeps only that tail", () => {
    const m = new StopMatcher(["aab"]);
    const {emits, matched} = byChar(m, "aaab");
    assert.deepEqual(emits, ["", "", "a", ""]);
    assert.equal(matched, "aab");
  });

  test("the stop inside one big push: the text before it", () => {
    const m = new StopMatcher(["STOP"]);
    assert.deepEqual(m.push("hello STOP world"), {emit: "hello ", matched: "STOP"});
  });

  test("the earliest of several stops wins, regardless of list order", () => {
    assert.deepEqual(new StopMatcher(["world", "lo"]).push("hello world"), {emit: "hel", matched: "lo"});
    assert.deepEqual(new StopMatcher(["lo", "world"]).push("hello world"), {emit: "hel", matched: "lo"});
    assert.deepEqual(new StopMatcher(["xyz", "o w"]).push("hello world xyz"), {emit: "hell", matched: "o w"});
  });

  test("overlapping prefixes ab / abc: a tie at the same position goes to the longer", () => {
    assert.deepEqual(new StopMatcher(["ab", "abc"]).push("xabcd"), {emit: "x", matched: "abc"});
    assert.deepEqual(new StopMatcher(["abc", "ab"]).push("xabcd"), {emit: "x", matched: "abc"});
  });

  test("overlapping prefixes char by char: ab completes first", () => {
    const m = new StopMatcher(["ab", "abc"]);
    const {emits, matched} = byChar(m, "xabc");
    assert.deepEqual(emits, ["x", "", "", ""]);
    assert.equal(matched, "ab");
  });

  test("the longest partial among several stops is held", () => {
    const m = new StopMatcher(["abc", "bcd"]);
    assert.deepEqual(m.push("xab"), {emit: "x", matched: null});
    assert.deepEqual(m.push("c"), {emit: "", matched: "abc"});
    const n = new StopMatcher(["abc", "bcd"]);
    assert.deepEqual(n.push("xab"), {emit: "x", matched: null});
    assert.deepEqual(n.push("x"), {emit: "abx", matched: null});
  });

  test("a stop spanning a held prefix and a new push", () => {
    const m = new StopMatcher(["</s>"]);
    assert.deepEqual(m.push("done</"), {emit: "done", matched: null});
    assert.deepEqual(m.push("s> more"), {emit: "", matched: "</s>"});
  });

  test("flush at the end releases held text, once", () => {
    const m = new StopMatcher(["###"]);
    assert.deepEqual(m.push("end##"), {emit: "end", matched: null});
    assert.equal(m.flush(), "##");
    assert.equal(m.flush(), "");
  });

  test("flush with nothing held is empty", () => {
    const m = new StopMatcher(["###"]);
    assert.deepEqual(m.push("plain"), {emit: "plain", matched: null});
    assert.equal(m.flush(), "");
  });

  test("no stops: passthrough", () => {
    const m = new StopMatcher([]);
    assert.deepEqual(m.push("a#"), {emit: "a#", matched: null});
    assert.deepEqual(m.push("##"), {emit: "##", matched: null});
    assert.equal(m.flush(), "");
  });

  test("after a match, further pushes emit nothing and flush is empty", () => {
    const m = new StopMatcher(["\n\n"]);
    assert.deepEqual(m.push("one\n\ntwo"), {emit: "one", matched: "\n\n"});
    assert.deepEqual(m.push("three"), {emit: "", matched: null});
    assert.deepEqual(m.push("\n\n"), {emit: "", matched: null});
    assert.equal(m.flush(), "");
  });

  test("multi-byte characters are held and released intact", () => {
    const m = new StopMatcher(["éé!"]);
    const {emits, matched} = byChar(m, "café!éé!");
    assert.equal(matched, "éé!");
    assert.equal(emits.join(""), "café!");
  });
});

describe("IncrementalDetokenizer", () => {
  // Token ids 1 and 2 are the two bytes of "é" (C3 A9); ids >= 10 are the character with that code.
  const bytesOf = (t: number): number[] => (t === 1 ? [0xc3] : t === 2 ? [0xa9] : [...new TextEncoder().encode(String.fromCharCode(t))]);
  function fake() {
    const calls: {tokens: number[]; context: number[]}[] = [];
    const detok = new IncrementalDetokenizer((tokens, context) => {
      calls.push({tokens: [...tokens], context: [...context]});
      return new TextDecoder().decode(Uint8Array.from(tokens.flatMap(bytesOf)));
    });
    return {detok, calls};
  }

  test("the fake: 1 alone is U+FFFD, 1 2 is é", () => {
    assert.equal(new TextDecoder().decode(Uint8Array.from([0xc3])), "\uFFFD");
    assert.equal(new TextDecoder().decode(Uint8Array.from([0xc3, 0xa9])), "é");
  });

  test("a split character is held, then released whole", () => {
    const {detok} = fake();
    assert.equal(detok.push(99), "c");
    assert.equal(detok.push(97), "a");
    assert.equal(detok.push(102), "f");
    assert.equal(detok.push(1), "");
    assert.equal(detok.push(2), "é");
    assert.equal(detok.push(33), "!");
    assert.equal(detok.flush(), "");
  });

  test("held tokens are detokenized together, with the committed tokens as context", () => {
    const {detok, calls} = fake();
    detok.push(104);
    detok.push(1);
    detok.push(2);
    assert.deepEqual(calls, [
      {tokens: [104], context: []},
      {tokens: [1], context: [104]},
      {tokens: [1, 2], context: [104]},
    ]);
  });

  test("flush releases a held partial character as U+FFFD", () => {
    const {detok} = fake();
    assert.equal(detok.push(1), "");
    assert.equal(detok.flush(), "\uFFFD");
    assert.equal(detok.flush(), "");
  });

  test("at most four tokens are held; the fourth releases the broken text", () => {
    const {detok} = fake();
    assert.equal(detok.push(1), "");
    assert.equal(detok.push(1), "");
    assert.equal(detok.push(1), "");
    assert.equal(detok.push(1), "\uFFFD\uFFFD\uFFFD\uFFFD");
    assert.equal(detok.flush(), "");
    assert.equal(detok.push(104), "h");
  });

  test("context is the last eight committed tokens, also after the history is trimmed", () => {
    const {detok, calls} = fake();
    for (let t = 10; t < 60; t++) detok.push(t);
    assert.deepEqual(calls.at(-1), {tokens: [59], context: [51, 52, 53, 54, 55, 56, 57, 58]});
    assert.deepEqual(calls[5], {tokens: [15], context: [10, 11, 12, 13, 14]});
  });
});
