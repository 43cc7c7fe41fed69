// nximg2-klein-4b on a real engine: stable-diffusion.cpp (the pinned inferna wheel) in its supervised Python worker,
// drawing with the generated FLUX.2 klein-shaped test weights (support/test-image-model.ts) at 256x256 (512, 1024 and
// a variation encoded as taken are the slow tier's, test/slow/images.test.ts: encoding a 512x512 picture takes about
// 40 s with these weights, so this server encodes an edit's picture at 128x128, SVC_IMAGE_REF_SIDE). Through the
// official openai client where it has a call (images.generate, images.edit), raw HTTP for what it does not type: n drawn one after
// another at seed + i, the same seed the same picture, url against b64_json, the prompt cut at 512 tokens, every
// refusal at its edge (the edit and variation refusals too: none of them draws), the queue's 503, a worker killed
// mid-picture, a client that hangs up, and what /health, /v1/models and /metrics say.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI, {toFile} from "openai";
import sharp from "sharp";
import {get, post, startServer, type OwnServer} from "../../support/server.ts";
import {testImageModelDir} from "../../support/test-image-model.ts";
import {testPng} from "../../support/test-projector.ts";

let server: OwnServer;
let client: OpenAI;
const MODEL = "nximg2-klein-4b";
const PNG_MAGIC = "89504e470d0a1a0a";
const RINGS = testPng(300, 200, (x, y) => (Math.hypot(x - 150, y - 100) % 30 < 15 ? [230, 40, 40] : [20, 60, 220]));

// The queue bound is short so the busy test does not wait a minute; a restart of the worker takes well under it,
// and one 768x768 picture (one executor pass) takes longer.
const QUEUE_TIMEOUT_S = 1.5;

before(async () => {
  const dir = await testImageModelDir();
  server = await startServer({SVC_NPU_MODELS: `${MODEL}=${dir}`, SVC_QUEUE_TIMEOUT: String(QUEUE_TIMEOUT_S), SVC_IMAGE_REF_SIDE: "128"}, 600_000);
  client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0});
});

after(async () => {
  await server?.stop();
});

const bytes = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64");

async function assertPng(png: Buffer, width: number, height: number): Promise<void> {
  assert.equal(png.subarray(0, 8).toString("hex"), PNG_MAGIC, "a PNG");
  const meta = await sharp(png).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height], ["png", width, height]);
}

async function generate(body: Record<string, unknown>): Promise<Buffer[]> {
  const r = await client.images.generate({model: MODEL, prompt: "a red cat on a mat", size: "256x256", ...body} as never);
  return (r.data ?? []).map((d) => bytes(d.b64_json));
}

/** A multipart request as OpenAI's SDK sends it, for the refusals the SDK's types would not let through. */
async function form(path: string, fields: Record<string, string>, files: Record<string, Buffer> = {}): Promise<{status: number; body: any}> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const [k, v] of Object.entries(files)) fd.append(k, new Blob([new Uint8Array(v)]), `${k}.png`);
  const r = await fetch(`${server.url}${path}`, {method: "POST", body: fd});
  return {status: r.status, body: await r.json()};
}

const sameBytes = (a: Buffer | undefined, b: Buffer | undefined) => !!a && !!b && a.equals(b);

describe("generations", {concurrency: 1}, () => {
  test("n=2 draws two different PNGs at seed and seed + 1; the same seed draws the same picture again", async () => {
    const r = await client.images.generate({model: MODEL, prompt: "a red cat on a mat", size: "256x256", n: 2, seed: 11} as never);
    const [a, b] = (r.data ?? []).map((d) => bytes(d.b64_json));
    await assertPng(a!, 256, 256);
    await assertPng(b!, 256, 256);
    assert.ok(!sameBytes(a, b), "the two pictures differ");
    assert.equal(r.size, "256x256");
    assert.equal(r.output_format, "png");
    assert.equal(r.usage?.input_tokens, 6 + 12, "the prompt's tokens and the template's");
    assert.equal(r.usage?.output_tokens, 2 * 256, "two pictures of 16x16 patches");
    assert.equal((r as unknown as {seed: number}).seed, 11);
    const [again] = await generate({seed: 12});
    assert.ok(sameBytes(again, b), "the second picture of seed 11 is the picture of seed 12");
  });

  test("url is a data URL of the same PNG; quality high and style draw the same picture", async () => {
    const [plain] = await generate({seed: 21});
    const r = await client.images.generate({model: MODEL, prompt: "a red cat on a mat", size: "256x256", seed: 21, response_format: "url",
      quality: "high", style: "vivid"} as never);
    const url = r.data?.[0]?.url ?? "";
    assert.match(url, /^data:image\/png;base64,/);
    assert.ok(sameBytes(bytes(url.slice("data:image/png;base64,".length)), plain));
    assert.equal(r.data?.[0]?.b64_json, undefined);
  });

  test("without a seed each request draws its own; another prompt draws another picture; any model name reaches the model", async () => {
    const one = await client.images.generate({model: "dall-e-3", prompt: "a red cat on a mat", size: "256x256"} as never);
    const two = await client.images.generate({prompt: "a red cat on a mat", size: "256x256"} as never);
    const seeds = [one, two].map((r) => (r as unknown as {seed: number}).seed);
    assert.notEqual(seeds[0], seeds[1]);
    assert.ok(!sameBytes(bytes(one.data?.[0]?.b64_json), bytes(two.data?.[0]?.b64_json)));
    const [cat] = await generate({seed: 5});
    const [dog] = await generate({seed: 5, prompt: "a blue dog in the snow"});
    assert.ok(!sameBytes(cat, dog), "the prompt reaches the model");
  });

  test("the prompt is cut where the templated prompt reaches 512 tokens: what follows changes nothing", async () => {
    // " cat" is one token; with "a" and the template's 12 tokens, 499 of them fill 512 exactly.
    const fill = (n: number) => `a${" cat".repeat(n)}`;
    const r = await post(`${server.url}/v1/images/generations`, {prompt: `${fill(499)} dog`, size: "256x256", seed: 3});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.usage.input_tokens, 512);
    const cut = await post(`${server.url}/v1/images/generations`, {prompt: `${fill(499)} bird`, size: "256x256", seed: 3});
    assert.ok(sameBytes(bytes(r.body.data[0].b64_json), bytes(cut.body.data[0].b64_json)), "past 512 tokens the prompt is not read");
    const under = [" dog", " bird"].map((w) => post(`${server.url}/v1/images/generations`, {prompt: `${fill(498)}${w}`, size: "256x256", seed: 3}));
    const [dog, bird] = await Promise.all(under);
    assert.equal(dog!.body.usage.input_tokens, 512);
    assert.ok(!sameBytes(bytes(dog!.body.data[0].b64_json), bytes(bird!.body.data[0].b64_json)), "the 512th token is read");
  });
});

describe("edits", {concurrency: 1}, () => {
  test("images.edit: one picture of any shape in, n 512x512 PNGs out from one encoding, each its own", async () => {
    const image = await toFile(RINGS, "rings.png", {type: "image/png"});
    const r = await client.images.edit({model: "gpt-image-1", image, prompt: "make the rings green", n: 2, seed: 9} as never);
    const [a, b] = (r.data ?? []).map((d) => bytes(d.b64_json));
    await assertPng(a!, 512, 512);
    await assertPng(b!, 512, 512);
    assert.ok(!sameBytes(a, b), "picture 1 is drawn at seed + 1");
    assert.equal(r.size, "512x512");
    assert.equal(r.usage?.input_tokens_details?.image_tokens, 64, "the picture encoded at 128x128: 8x8 patches");
    assert.equal(r.usage?.output_tokens, 2 * 1024);
    const [again] = (await client.images.edit({model: MODEL, image: await toFile(await sharp(RINGS).webp({lossless: true}).toBuffer(), "rings.webp"),
      prompt: "make the rings green", seed: 10, size: "512x512"} as never)).data ?? [];
    assert.ok(sameBytes(bytes(again?.b64_json), b), "the same picture as WebP, at seed + 1, draws picture 1 again");
  });
});

describe("refusals", {concurrency: 1}, () => {
  const refused = async (r: {status: number; body: any}, param: string, rule: RegExp) => {
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.param, param, JSON.stringify(r.body));
    assert.equal(r.body.error.type, "invalid_request_error");
    assert.match(r.body.error.message, rule);
  };
  const gen = (body: Record<string, unknown>) => post(`${server.url}/v1/images/generations`, {prompt: "a cat", ...body});

  test("generations: every rule at its edge, each a 400 naming the field and what it takes", async () => {
    await refused(await gen({size: "300x300"}), "size", /one of 256x256, 512x512, .*640x1024$/);
    await refused(await gen({n: 0}), "n", /from 1 to 4/);
    await refused(await gen({n: 5}), "n", /from 1 to 4/);
    await refused(await gen({steps: 3}), "steps", /must be 4/);
    await refused(await gen({num_inference_steps: 5}), "num_inference_steps", /must be 4/);
    await refused(await gen({quality: "low"}), "quality", /low is not drawn/);
    await refused(await gen({output_format: "webp"}), "output_format", /must be png/);
    await refused(await gen({response_format: "png"}), "response_format", /b64_json, url/);
    await refused(await gen({seed: -1}), "seed", /from 0 to 4294967295/);
    await refused(await gen({background: "transparent"}), "background", /opaque/);
    await refused(await gen({stream: true}), "stream", /not streamed/);
    await refused(await gen({prompt: " "}), "prompt", /required/);
    await refused(await gen({model: "svc-nx3.8-flash-next"}), "model", /is the generation model/);
    await refused(await gen({guidance_scale: 3}), "guidance_scale", /not a field of this route/);
  });

  test("the edges that are taken: n=4 and seed 4294967295, steps 4", async () => {
    const r = await gen({n: 4, seed: 4294967295, steps: 4, size: "256x256", quality: "auto"});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.length, 4);
    assert.equal(new Set(r.body.data.map((d: {b64_json: string}) => d.b64_json)).size, 4, "four different pictures");
  });

  test("edits and variations: mask, a missing or second picture, a prompt where none is taken, another size, 25 MiB", async () => {
    await refused(await form("/v1/images/edits", {prompt: "x"}, {image: RINGS, mask: RINGS}), "mask", /not supported/);
    await refused(await form("/v1/images/edits", {prompt: "x"}), "image", /is required: one picture/);
    await refused(await form("/v1/images/edits", {}, {image: RINGS}), "prompt", /required/);
    await refused(await form("/v1/images/edits", {prompt: "x", size: "256x256"}, {image: RINGS}), "size", /auto or one of 512x512$/);
    await refused(await form("/v1/images/variations", {prompt: "x"}, {image: RINGS}), "prompt", /not taken by variations/);
    const two = new FormData();
    two.append("image[]", new Blob([new Uint8Array(RINGS)]), "a.png");
    two.append("image[]", new Blob([new Uint8Array(RINGS)]), "b.png");
    two.append("prompt", "x");
    const r = await fetch(`${server.url}/v1/images/edits`, {method: "POST", body: two});
    await refused({status: r.status, body: await r.json()}, "image", /one picture/);
    // 25 MiB is taken (then refused as no picture); one byte more is refused as too large.
    const limit = 25 * 1024 * 1024;
    await refused(await form("/v1/images/variations", {}, {image: Buffer.alloc(limit, 1)}), "image", /not a PNG, JPEG, WebP, GIF or BMP/);
    await refused(await form("/v1/images/variations", {}, {image: Buffer.alloc(limit + 1, 1)}), "image", /larger than 25 MiB/);
    await refused(await form("/v1/images/variations", {}, {image: RINGS.subarray(0, RINGS.length - 200)}), "image", /could not be decoded|truncated|corrupt/);
  });

  test("after the refusals, a picture is drawn", async () => {
    const [png] = await generate({seed: 1});
    await assertPng(png!, 256, 256);
  });
});

describe("queue, failures and reports", {concurrency: 1}, () => {
  const worker = () => get(`${server.url}/health`).then((r) => r.body.children.find((c: {name: string}) => c.name === MODEL));
  const ready = async () => {
    for (let i = 0; i < 300; i++) {
      const w = await worker();
      if (w.state === "ready") return w;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.fail("the image worker did not come back");
  };

  test("a request that cannot start within SVC_QUEUE_TIMEOUT gets 503 engine_busy with Retry-After", async () => {
    // Passes run in arrival order, so a request waits behind one picture of another request, not all of them:
    // one picture that takes longer than the bound.
    const long = post(`${server.url}/v1/images/generations`, {prompt: "a cat", size: "768x768", seed: 1});
    await new Promise((res) => setTimeout(res, 300));
    const started = Date.now();
    const busy = await post(`${server.url}/v1/images/generations`, {prompt: "a dog", size: "256x256"});
    assert.equal(busy.status, 503, busy.text);
    assert.equal(busy.body.error.code, "engine_busy");
    assert.ok(Number(busy.headers.get("retry-after")) >= 1);
    assert.ok(Date.now() - started >= QUEUE_TIMEOUT_S * 1000 - 200, "it waited its turn first");
    assert.equal((await long).status, 200);
  });

  test("the worker killed mid-picture: that request gets 503 model_restarting, the next one is drawn", async () => {
    const before = await ready();
    const drawing = post(`${server.url}/v1/images/generations`, {prompt: "a cat", size: "256x256", n: 4});
    await new Promise((res) => setTimeout(res, 500));
    process.kill(before.pid, "SIGKILL");
    const lost = await drawing;
    assert.equal(lost.status, 503, lost.text);
    assert.equal(lost.body.error.code, "model_restarting");
    assert.match(lost.body.error.message, /nximg2-klein-4b/);
    const back = await ready();
    assert.notEqual(back.pid, before.pid);
    assert.equal(back.restarts, before.restarts + 1);
    const [png] = await generate({seed: 2});
    await assertPng(png!, 256, 256);
  });

  test("a client that hangs up mid-picture is let go; the next request is drawn", async () => {
    const seen = server.logs.length;
    const ac = new AbortController();
    const gone = client.images.generate({model: MODEL, prompt: "a cat", size: "256x256", n: 4} as never, {signal: ac.signal});
    setTimeout(() => ac.abort(), 400);
    await assert.rejects(gone);
    const [png] = await generate({seed: 3});
    await assertPng(png!, 256, 256);
    const failed = server.logs.slice(seen).filter((l) => /request failed/.test(l));
    assert.deepEqual(failed, [], "a hang-up is not logged as a server failure");
  });

  test("/health, /v1/models and /metrics list the image model", async () => {
    const health = (await get(`${server.url}/health`)).body;
    const listed = health.side_models.models.find((m: {id: string}) => m.id === MODEL);
    assert.equal(listed?.kind, "image");
    assert.equal(listed?.model, "Flux.2 klein", "what stable-diffusion.cpp recognised the files as");
    const models = (await get(`${server.url}/v1/models`)).body.data.map((m: {id: string}) => m.id);
    assert.ok(models.includes(MODEL));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const drawn = Number(/^svc:images_total (\d+)/m.exec(metrics)?.[1]);
    assert.ok(drawn >= 10, `svc:images_total ${drawn}`);
    assert.match(metrics, new RegExp(`svc:child_ready\\{child="${MODEL}"\\} 1`));
  });
});
