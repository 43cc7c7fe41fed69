// The image routes' shared fields (api/side/images/fields.ts): every rule of the spec's image tables at its edge,
// each refusal naming the field and the allowed values. The routes themselves, with a real engine, are in
// test/e2e/images.test.ts.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ApiError} from "../../../../../src/core/errors.ts";
import {DEFAULT_SIZE, IMAGE_SIZES, MAX_PROMPT_CHARS, readImageOptions, readPrompt, refuseUnknown, COMMON_FIELDS} from "../../../../../src/api/side/images/fields.ts";

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (e) {
    assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
    assert.equal(e.status, 400);
    return e;
  }
  assert.fail("accepted");
}

const options = (fields: Record<string, unknown>, sizes: readonly string[] = IMAGE_SIZES) => readImageOptions(fields, sizes);

describe("image sizes", () => {
  test("every size of the spec's list is drawn at its width and height", () => {
    assert.equal(IMAGE_SIZES.length, 20);
    for (const size of IMAGE_SIZES) {
      const o = options({size});
      assert.equal(`${o.width}x${o.height}`, size);
    }
  });

  test("auto and no size are 512x512", () => {
    assert.deepEqual([options({size: "auto"}).width, options({size: "auto"}).height], [512, 512]);
    assert.equal(options({}).size, DEFAULT_SIZE);
  });

  test("any other size is refused with the list", () => {
    for (const size of ["300x300", "1024x1025", "1792x1024", "512X512", " 512x512", "", "512"]) {
      const e = refusal(() => options({size}));
      assert.equal(e.param, "size");
      assert.match(e.message, /must be auto or one of 256x256, 512x512, .*640x1024$/);
    }
    assert.equal(refusal(() => options({size: 512})).param, "size");
  });

  test("edits and variations take 512x512 or auto only", () => {
    assert.equal(options({size: "512x512"}, [DEFAULT_SIZE]).size, "512x512");
    assert.equal(options({size: "auto"}, [DEFAULT_SIZE]).size, "512x512");
    const e = refusal(() => options({size: "256x256"}, [DEFAULT_SIZE]));
    assert.match(e.message, /^size: must be auto or one of 512x512$/);
  });
});

describe("n, steps, seed", () => {
  test("n from 1 to 4, as a JSON number or a form field", () => {
    for (const n of [1, 2, 3, 4, "1", "4"]) assert.equal(options({n}).n, Number(n));
    assert.equal(options({}).n, 1);
    for (const n of [0, 5, -1, 1.5, "5", "0", "two", "", true]) assert.equal(refusal(() => options({n})).param, "n");
  });

  test("steps and num_inference_steps: only 4", () => {
    for (const name of ["steps", "num_inference_steps"]) {
      options({[name]: 4});
      options({[name]: "4"});
      for (const v of [3, 5, 1, 50, "", "four"]) {
        const e = refusal(() => options({[name]: v}));
        assert.equal(e.param, name);
        assert.match(e.message, /must be 4/);
      }
    }
  });

  test("seed: an unsigned 32-bit integer; absent lets the request draw its own", () => {
    assert.equal(options({}).seed, null);
    assert.equal(options({seed: 0}).seed, 0);
    assert.equal(options({seed: 4294967295}).seed, 4294967295);
    assert.equal(options({seed: "17"}).seed, 17);
    for (const seed of [-1, 4294967296, 1.5, "x", "-3"]) assert.equal(refusal(() => options({seed})).param, "seed");
  });
});

describe("formats and quality", () => {
  test("response_format b64_json (default) or url", () => {
    assert.equal(options({}).responseFormat, "b64_json");
    assert.equal(options({response_format: "url"}).responseFormat, "url");
    const e = refusal(() => options({response_format: "png"}));
    assert.equal(e.message, "response_format: must be one of b64_json, url");
  });

  test("output_format png only; output_compression refused", () => {
    options({output_format: "png"});
    for (const f of ["jpeg", "webp", "PNG"]) assert.match(refusal(() => options({output_format: f})).message, /^output_format: must be png/);
    assert.equal(refusal(() => options({output_compression: 80})).param, "output_compression");
  });

  test("quality low is refused; every other value draws the same", () => {
    for (const q of ["auto", "standard", "hd", "medium", "high"]) assert.equal(options({quality: q}).quality, q);
    assert.match(refusal(() => options({quality: "low"})).message, /^quality: low is not drawn/);
    assert.equal(refusal(() => options({quality: "ultra"})).param, "quality");
  });

  test("transparent backgrounds and streaming are refused; opaque and false are fine", () => {
    options({background: "opaque", stream: false, partial_images: 0});
    options({stream: "false"});
    assert.equal(refusal(() => options({background: "transparent"})).param, "background");
    assert.equal(refusal(() => options({stream: true})).param, "stream");
    assert.equal(refusal(() => options({partial_images: 2})).param, "partial_images");
  });
});

describe("prompt and unknown fields", () => {
  test("generations and edits need a prompt", () => {
    assert.equal(readPrompt({prompt: "a cat"}, true), "a cat");
    for (const prompt of [undefined, "", "   ", 3]) assert.equal(refusal(() => readPrompt({prompt}, true)).param, "prompt");
    readPrompt({prompt: "x".repeat(MAX_PROMPT_CHARS)}, true);
    assert.equal(refusal(() => readPrompt({prompt: "x".repeat(MAX_PROMPT_CHARS + 1)}, true)).param, "prompt");
  });

  test("variations take none", () => {
    assert.equal(readPrompt({}, false), "");
    assert.equal(readPrompt({prompt: ""}, false), "");
    assert.match(refusal(() => readPrompt({prompt: "a cat"}, false)).message, /^prompt: is not taken by variations/);
  });

  test("a field the route does not know is refused by name", () => {
    refuseUnknown({prompt: "x", model: "m", n: 1}, COMMON_FIELDS);
    const e = refusal(() => refuseUnknown({prompt: "x", guidance: 3}, COMMON_FIELDS));
    assert.equal(e.param, "guidance");
  });
});
