import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {dequantize, GGML_TYPE, quantize, tensorBytes} from "../../../src/models/gguf-quantize.ts";
import {floatToHalf as toHalfBits, fromHalfBits} from "../../../src/models/half-float.ts";
import {tokenClass} from "../../../support/test-model.ts";

describe("half precision", () => {
  test("exact values round-trip, and known bit patterns match IEEE binary16", () => {
    for (const [x, bits] of [[0, 0], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [2 ** -24, 0x0001], [2 ** -14, 0x0400]] as const) {
      assert.equal(toHalfBits(x), bits, `bits of ${x}`);
      assert.equal(fromHalfBits(bits), x, `value of ${bits.toString(16)}`);
    }
  });

  test("rounds to nearest even, overflows to infinity, underflows to zero", () => {
    assert.equal(toHalfBits(1 + 2 ** -11), 0x3c00, "a tie between 1 and its successor goes to the even 1");
    assert.equal(toHalfBits(1 + 3 * 2 ** -11), 0x3c02, "a tie between odd 0x3c01 and 0x3c02 goes to 0x3c02");
    assert.equal(toHalfBits(1 + 2 ** -11 + 2 ** -20), 0x3c01, "past the tie rounds up");
    assert.equal(toHalfBits(1e6), 0x7c00);
    assert.equal(toHalfBits(-1e6), 0xfc00);
    assert.equal(toHalfBits(2 ** -26), 0);
    assert.ok(Number.isNaN(fromHalfBits(toHalfBits(NaN))));
  });
});

describe("block quantisation", () => {
  const row = Float32Array.from({length: 64}, (_, i) => Math.sin(i * 1.7) * (i % 5) - 0.3);

  test("sizes are ggml's: 34 bytes per 32 values in Q8_0, 20 in Q4_1; a row that is not whole blocks is refused", () => {
    assert.equal(tensorBytes(GGML_TYPE.Q8_0, 64), 68);
    assert.equal(tensorBytes(GGML_TYPE.Q4_1, 64), 40);
    assert.equal(quantize(GGML_TYPE.Q8_0, row).length, 68);
    assert.throws(() => tensorBytes(GGML_TYPE.Q4_1, 48), /multiple of 32/);
  });

  test("Q8_0 keeps every value within half a step of its block's scale", () => {
    const back = dequantize(GGML_TYPE.Q8_0, quantize(GGML_TYPE.Q8_0, row), row.length);
    for (let b = 0; b < 2; b++) {
      const block = row.subarray(b * 32, b * 32 + 32);
      const step = Math.max(...block.map(Math.abs)) / 127;
      block.forEach((v, i) => assert.ok(Math.abs(back[b * 32 + i]! - v) <= step * 0.51 + 1e-3, `value ${b * 32 + i}: ${v} came back ${back[b * 32 + i]}`));
    }
  });

  test("Q4_1 keeps every value within half a step of (max - min) / 15, and the block's minimum and maximum", () => {
    const back = dequantize(GGML_TYPE.Q4_1, quantize(GGML_TYPE.Q4_1, row), row.length);
    for (let b = 0; b < 2; b++) {
      const block = row.subarray(b * 32, b * 32 + 32);
      const step = (Math.max(...block) - Math.min(...block)) / 15;
      block.forEach((v, i) => assert.ok(Math.abs(back[b * 32 + i]! - v) <= step * 0.51 + 1e-2, `value ${b * 32 + i}: ${v} came back ${back[b * 32 + i]}`));
    }
  });

  test("a block of zeros stays exactly zero (the test model's rows that never touch the bias dimension)", () => {
    const zeros = new Float32Array(32);
    assert.deepEqual([...dequantize(GGML_TYPE.Q4_1, quantize(GGML_TYPE.Q4_1, zeros), 32)], [...zeros]);
    assert.deepEqual([...dequantize(GGML_TYPE.Q8_0, quantize(GGML_TYPE.Q8_0, zeros), 32)], [...zeros]);
  });
});

describe("the test model's token classes", () => {
  test("words and digits compete, JSON punctuation is lifted, everything else (control tokens included) is pushed down", () => {
    assert.equal(tokenClass("Ġhello", 1), "word");
    assert.equal(tokenClass("ing", 1), "word");
    assert.equal(tokenClass("7", 1), "word");
    assert.equal(tokenClass("Ġ\"", 1), "punctuation");
    assert.equal(tokenClass("\"},", 1), "punctuation");
    assert.equal(tokenClass("a", 1), "other", "a single letter is not a word token");
    assert.equal(tokenClass("Ċ", 1), "other", "no newlines");
    assert.equal(tokenClass("<|im_end|>", 3), "other", "control tokens never win in free text");
    assert.equal(tokenClass("Ġhello", 3), "other");
  });
});
