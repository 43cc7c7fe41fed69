// embeddingnx-2's request body (api/side/embeddings/multimodal.ts): mixed inputs kept in order, each limit of the
// spec at its edge, and every refusal naming its input. The engine's token count is given by the test (the
// end-to-end test counts on the real child).

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import sharp from "sharp";
import {decodeMultimodal} from "../../../../../src/api/side/embeddings/multimodal.ts";
import type {MultimodalEmbeddingRunner} from "../../../../../src/side-models/embedding/multimodal-runner.ts";
import {encodeWav, sine} from "../../../../../support/speech-audio.ts";
import {apiErrorAsync} from "../../../../fixtures/api-error.ts";

/** Counts a text as one token per character: enough to put the 8,192-token limit at a known length. */
const runner = {id: "embeddingnx-2", countTokens: async (text: string) => text.length} as unknown as MultimodalEmbeddingRunner;
const png = (await sharp({create: {width: 100, height: 60, channels: 3, background: {r: 200, g: 10, b: 10}}}).png().toBuffer()).toString("base64");
const picture = {type: "image_url", image_url: {url: `data:image/png;base64,${png}`}};
const clip = (seconds: number, o: {rate?: number; channels?: number; bits?: 8 | 16 | 24 | 32; encoding?: "float"} = {}) => ({type: "input_audio",
  input_audio: {format: "wav", data: Buffer.from(encodeWav(sine({rate: o.rate ?? 16000, seconds, hz: 440, amplitude: 0.3, channels: o.channels}),
    {bits: o.bits, encoding: o.encoding})).toString("base64")}});

async function refused(body: unknown, param: string, rule: RegExp): Promise<void> {
  const err = await apiErrorAsync(() => decodeMultimodal(body, runner));
  assert.equal(err.status, 400);
  assert.equal(err.param, param);
  assert.match(err.message, rule);
}

describe("embeddingnx-2 inputs", () => {
  test("texts, pictures and clips mixed, in order; prompt_name prefixes texts only", async () => {
    const r = await decodeMultimodal({model: "embeddingnx-2", input: ["a cat", picture, clip(1), "a dog"], prompt_name: "query"}, runner);
    assert.deepEqual(r.inputs.map((i) => i.kind), ["text", "picture", "audio", "text"]);
    assert.deepEqual(r.inputs.filter((i) => i.kind === "text").map((i) => (i as {text: string}).text),
      ["task: search result | query: a cat", "task: search result | query: a dog"]);
    assert.equal(r.dimensions, 768);
    const doc = await decodeMultimodal({model: "m", input: "x", prompt_name: "document"}, runner);
    assert.equal((doc.inputs[0] as {text: string}).text, "title: none | text: x");
  });

  test("a picture is resized keeping its shape to sides that are multiples of 48", async () => {
    const r = await decodeMultimodal({model: "m", input: [picture]}, runner);
    const meta = await sharp((r.inputs[0] as {png: Uint8Array}).png).metadata();
    assert.deepEqual([meta.width! % 48, meta.height! % 48], [0, 0]);
    assert.ok(meta.width! > meta.height!);
  });

  test("any WAV: 8 to 32-bit PCM or float, any rate, any channels; the engine gets 16 kHz mono 16-bit", async () => {
    for (const o of [{bits: 8 as const}, {bits: 24 as const, rate: 44100, channels: 2}, {bits: 32 as const}, {encoding: "float" as const, rate: 48000}]) {
      const r = await decodeMultimodal({model: "m", input: [clip(0.5, o)]}, runner);
      const wav = Buffer.from((r.inputs[0] as {wav: Uint8Array}).wav);
      assert.equal(wav.readUInt32LE(24), 16000, JSON.stringify(o));
      assert.equal(wav.readUInt16LE(22), 1);
      assert.equal(wav.readUInt16LE(34), 16);
    }
  });

  test("limits at their edges: 30 s of sound, 64 pictures and clips, 8,192 tokens, dimensions 32 to 768", async () => {
    await decodeMultimodal({model: "m", input: [clip(30)]}, runner);
    await refused({model: "m", input: ["x", clip(30.01)]}, "input[1].input_audio.data", /30\.01 s of sound; embeddingnx-2 reads at most 30 s/);
    await decodeMultimodal({model: "m", input: Array.from({length: 64}, () => picture)}, runner);
    await refused({model: "m", input: Array.from({length: 65}, () => picture)}, "input", /holds 65 pictures and clips; embeddingnx-2 reads at most 64/);
    await decodeMultimodal({model: "m", input: ["a".repeat(8192)]}, runner);
    await refused({model: "m", input: ["a".repeat(8193)]}, "input[0]", /is 8193 tokens; embeddingnx-2 reads at most 8192 per text/);
    await refused({model: "m", input: ["a".repeat(8192)], prompt_name: "query"}, "input[0]", /with its query prompt/);
    assert.equal((await decodeMultimodal({model: "m", input: "x", dimensions: 32}, runner)).dimensions, 32);
    assert.equal((await decodeMultimodal({model: "m", input: "x", dimensions: 768}, runner)).dimensions, 768);
    await refused({model: "m", input: "x", dimensions: 31}, "dimensions", /from 32 to 768/);
    await refused({model: "m", input: "x", dimensions: 769}, "dimensions", /from 32 to 768/);
  });

  test("refusals name the input: bad base64, not WAV, format other than wav, a URL, an unknown item, a fetchable picture", async () => {
    await refused({model: "m", input: [{type: "input_audio", input_audio: {format: "wav", data: "%%%"}}]}, "input[0].input_audio.data", /must be base64/);
    await refused({model: "m", input: [{type: "input_audio", input_audio: {format: "wav", data: png}}]}, "input[0].input_audio.data", /WAV/);
    await refused({model: "m", input: [{type: "input_audio", input_audio: {format: "mp3", data: "AAAA"}}]}, "input[0].input_audio.format", /must be "wav"/);
    await refused({model: "m", input: [{type: "input_audio", input_audio: {format: "wav", data: "https://x/y.wav"}}]}, "input[0].input_audio.data",
      /no URL is ever fetched/);
    await refused({model: "m", input: [{type: "video"}]}, "input[0].type", /must be a string, \{type: "image_url"/);
    await refused({model: "m", input: [{type: "image_url", image_url: {url: "https://x/y.png"}}]}, "input[0].image_url.url", /no URL is ever fetched/);
    await refused({model: "m", input: [""]}, "input[0]", /must not be empty/);
    await refused({model: "m", input: "x", instruction: "find"}, "instruction", /is not a field/);
  });
});
