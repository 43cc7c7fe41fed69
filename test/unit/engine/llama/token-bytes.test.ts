// Exact token bytes from vocabulary text: GPT-2 byte-level BPE, SentencePiece byte tokens and ▁, specials.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {tokenTextToBytes} from "../../../../src/engine/llama/token-bytes.ts";

const bytes = (s: string) => [...new TextEncoder().encode(s)];
const arr = (u: Uint8Array) => [...u];

describe("gpt2 (byte-level BPE)", () => {
  test("Ġ is a space", () => {
    assert.deepEqual(arr(tokenTextToBytes("Ġhello", "gpt2", false)), bytes(" hello"));
  });
  test("Ċ is a newline, ĉ a tab, Ā the zero byte", () => {
    assert.deepEqual(arr(tokenTextToBytes("Ċ", "gpt2", false)), [10]);
    assert.deepEqual(arr(tokenTextToBytes("ĉ", "gpt2", false)), [9]);
    assert.deepEqual(arr(tokenTextToBytes("Ā", "gpt2", false)), [0]);
  });
  test("the shifted range: ġ is 0x7F, ł is 0xA0, Ń is 0xAD", () => {
    assert.deepEqual(arr(tokenTextToBytes("ġ", "gpt2", false)), [0x7f]);
    assert.deepEqual(arr(tokenTextToBytes("\u0142", "gpt2", false)), [0xa0]);
    assert.deepEqual(arr(tokenTextToBytes("\u0143", "gpt2", false)), [0xad]);
  });
  test("printable Latin-1 stands for itself: Ã© is the UTF-8 of é", () => {
    assert.deepEqual(arr(tokenTextToBytes("Ã©", "gpt2", false)), [0xc3, 0xa9]);
    assert.equal(new TextDecoder().decode(tokenTextToBytes("cafÃ©", "gpt2", false)), "café");
  });
  test("half a UTF-8 character is returned as its one byte", () => {
    assert.deepEqual(arr(tokenTextToBytes("â", "gpt2", false)), [0xe2]);
  });
  test("a character outside the table falls back to the text's UTF-8", () => {
    assert.deepEqual(arr(tokenTextToBytes("日本", "gpt2", false)), bytes("日本"));
    assert.deepEqual(arr(tokenTextToBytes("a b", "gpt2", false)), bytes("a b"));
  });
  test("all 256 bytes round-trip through the table", () => {
    // Rebuild GPT-2's bytes_to_unicode independently.
    const bs: number[] = [];
    for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
    for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
    for (let b = 0xae; b <= 0xff; b++) bs.push(b);
    const cs = [...bs];
    let n = 0;
    for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
    const text = Array.from({length: 256}, (_, b) => String.fromCodePoint(cs[bs.indexOf(b)]!)).join("");
    assert.deepEqual(arr(tokenTextToBytes(text, "gpt2", false)), Array.from({length: 256}, (_, b) => b));
  });
});

describe("llama (SentencePiece)", () => {
  test("<0xE2> is the raw byte, either hex case", () => {
    assert.deepEqual(arr(tokenTextToBytes("<0xE2>", "llama", false)), [0xe2]);
    assert.deepEqual(arr(tokenTextToBytes("<0x0A>", "llama", false)), [0x0a]);
    assert.deepEqual(arr(tokenTextToBytes("<0xff>", "llama", false)), [0xff]);
  });
  test("▁ is a space", () => {
    assert.deepEqual(arr(tokenTextToBytes("▁the", "llama", false)), bytes(" the"));
    assert.deepEqual(arr(tokenTextToBytes("▁▁", "llama", false)), [32, 32]);
  });
  test("other text is UTF-8; near-miss byte tokens are text", () => {
    assert.deepEqual(arr(tokenTextToBytes("é", "llama", false)), [0xc3, 0xa9]);
    assert.deepEqual(arr(tokenTextToBytes("<0xE2>x", "llama", false)), bytes("<0xE2>x"));
    assert.deepEqual(arr(tokenTextToBytes("<0xE>", "llama", false)), bytes("<0xE>"));
  });
});

describe("special tokens and other vocabularies", () => {
  test("specials are their UTF-8 text, untouched by either table", () => {
    assert.deepEqual(arr(tokenTextToBytes("<|im_start|>", "gpt2", true)), bytes("<|im_start|>"));
    assert.deepEqual(arr(tokenTextToBytes("Ġ<s>", "gpt2", true)), bytes("Ġ<s>"));
    assert.deepEqual(arr(tokenTextToBytes("<0xE2>", "llama", true)), bytes("<0xE2>"));
    assert.deepEqual(arr(tokenTextToBytes("▁</s>", "llama", true)), bytes("▁</s>"));
  });
  test("other vocabularies are UTF-8 text", () => {
    assert.deepEqual(arr(tokenTextToBytes("Ġ▁x", "other", false)), bytes("Ġ▁x"));
  });
});
