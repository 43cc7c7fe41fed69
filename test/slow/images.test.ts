// The image model's larger sizes and a variation, on the generated FLUX.2 klein-shaped test weights (the default
// tier draws 256x256 and an edit whose picture is encoded at 128x128, SVC_IMAGE_REF_SIDE: test/e2e/images.test.ts).
// 512x512 (`auto` and named) and one 1024x1024; images.createVariation through the official openai client with a
// JPEG of another shape, its picture encoded at 256x256: no prompt, n takes from one encoding, each its own.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI, {toFile} from "openai";
import sharp from "sharp";
import {startServer, type OwnServer} from "../../support/server.ts";
import {testImageModelDir} from "../../support/test-image-model.ts";
import {testPng} from "../../support/test-projector.ts";

let server: OwnServer;
let client: OpenAI;
const MODEL = "nximg2-klein-4b";

before(async () => {
  // The slow tier runs one file at a time: the worker may take both cores (SVC_IMAGE_THREADS). A variation's picture
  // is encoded at 256x256 (SVC_IMAGE_REF_SIDE): at 512 the test weights' full-width encoder alone takes 20 s on two
  // cores, which test:all's budget does not hold; the e2e tier encodes at 128.
  server = await startServer({SVC_NPU_MODELS: `${MODEL}=${await testImageModelDir()}`, SVC_IMAGE_THREADS: "2", SVC_IMAGE_REF_SIDE: "256"}, 600_000);
  client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0});
});

after(async () => {
  await server?.stop();
});

const bytes = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64");

async function size(png: Buffer): Promise<string> {
  const meta = await sharp(png).metadata();
  assert.equal(meta.format, "png");
  return `${meta.width}x${meta.height}`;
}

describe("image sizes and variations", {concurrency: 1}, () => {
  test("auto is 512x512: the same picture as 512x512 named", async () => {
    const auto = await client.images.generate({model: MODEL, prompt: "a lighthouse at dusk", seed: 4} as never);
    const named = await client.images.generate({model: MODEL, prompt: "a lighthouse at dusk", seed: 4, size: "512x512"} as never);
    const png = bytes(auto.data?.[0]?.b64_json);
    assert.equal(await size(png), "512x512");
    assert.equal(auto.size, "512x512");
    assert.ok(png.equals(bytes(named.data?.[0]?.b64_json)));
  });

  test("1024x1024 is drawn at its size", async () => {
    for (const s of ["1024x1024"]) {
      const r = await client.images.generate({model: MODEL, prompt: "a lighthouse at dusk", size: s, seed: 1} as never);
      assert.equal(await size(bytes(r.data?.[0]?.b64_json)), s);
      assert.equal(r.usage?.output_tokens, (Number(s.split("x")[0]) * Number(s.split("x")[1])) / 256);
    }
  });

  test("images.createVariation: a JPEG of another shape, no prompt, two takes at seed and seed + 1", async () => {
    const jpeg = await sharp(testPng(200, 320, (x, y) => [(x * 255) / 199, (y * 255) / 319, 120])).jpeg().toBuffer();
    const r = await client.images.createVariation({image: await toFile(jpeg, "ramp.jpg", {type: "image/jpeg"}), n: 2, seed: 8} as never);
    const [a, b] = (r.data ?? []).map((d) => bytes(d.b64_json));
    assert.equal(await size(a!), "512x512");
    assert.equal(await size(b!), "512x512");
    assert.ok(!a!.equals(b!), "each seed gives another take");
    assert.equal(r.usage?.input_tokens_details?.image_tokens, 256, "the picture encoded at 256x256: 16x16 patches");
    assert.equal(r.usage?.input_tokens_details?.text_tokens, 12, "a variation's prompt is empty: the template alone");
  });
});
