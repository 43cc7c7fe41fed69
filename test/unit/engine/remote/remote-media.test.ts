// A prompt with pictures as llama-server reads it (engine/remote/remote-media.ts): text with the replica's media
// marker where each picture's run of positions was, and the pictures' bytes in order.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {PromptMedia} from "../../../../src/core/media.ts";
import {promptField} from "../../../../src/engine/remote/remote-media.ts";

const picture = (id: number, tokens: number, byte: number): PromptMedia =>
  ({id, tokens, png: new Uint8Array([byte]), hash: String(byte), width: 1, height: 1, field: "f"});
const A = picture(-5, 3, 1);
const B = picture(-9, 2, 2);
const media = new Map([[A.id, A], [B.id, B]]);
const text = {detokenize: (t: readonly number[]) => t.map((x) => `<${x}>`).join(""), autoBos: 1};
const b64 = (byte: number) => Buffer.from([byte]).toString("base64");

describe("promptField", () => {
  test("a prompt without pictures goes as token ids, untouched", () => {
    const prompt = [1, 2, 3];
    assert.equal(promptField(prompt, undefined, null, text), prompt);
  });

  test("pictures become the marker, in order, with their bytes; the BOS the replica adds itself is left out", () => {
    const prompt = [1, 7, -5, -5, -5, 8, -9, -9, 9];
    assert.deepEqual(promptField(prompt, media, "<M>", text), {prompt_string: "<7><M><8><M><9>", multimodal_data: [b64(1), b64(2)]});
  });

  test("the same picture twice in a row is two pictures (its run length says where one ends)", () => {
    assert.deepEqual(promptField([7, -5, -5, -5, -5, -5, -5], media, "<M>", text), {prompt_string: "<7><M><M>", multimodal_data: [b64(1), b64(1)]});
  });

  test("without a BOS the replica adds, the first token stays", () => {
    assert.deepEqual(promptField([1, -9, -9], media, "<M>", {...text, autoBos: null}), {prompt_string: "<1><M>", multimodal_data: [b64(2)]});
  });

  test("a picture the request does not hold, or a replica without a marker, is an error (never a silent text prompt)", () => {
    assert.throws(() => promptField([7, -3], media, "<M>", text), /picture -3/);
    assert.throws(() => promptField([7, -5, -5, -5], media, null, text), /does not read them/);
  });
});
