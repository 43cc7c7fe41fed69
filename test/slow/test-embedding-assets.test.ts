// The multimodal embedding side model's test assets in a real engine: llama-server (built from the llama.cpp source
// node-llama-cpp bundles) on the test embedding model (support/test-model.ts, width 768) with the test projector's
// vision-and-audio variant (support/test-projector.ts with {audio: true}), started with --embeddings --pooling mean.
// Checks what the embedding tests will lean on: the server sees pictures and sounds; text, a picture and a sound in
// one /embeddings request come back as three 768-wide vectors; a 30 s 16 kHz mono WAV fits (two 750-embedding
// chunks: mtmd appends 30 s of silence to every sound and keeps each whole 3,000-frame chunk of the log-mel, so from
// 29.99 s on a sound takes two, the second mostly silence). Equal and different inputs through svc, and sounds of any
// WAV layout (svc resamples them to 16 kHz mono itself), are in test/e2e/embeddings-multimodal.test.ts. Slow tier: it
// builds llama-server on first use (minutes; reused after).
//
// The flags a sound needs: an embedding's whole input must fit one micro-batch (the server refuses it otherwise:
// "input (765 tokens) is too large to process. increase the physical batch size (current batch size: 512)", even
// for a 1 s sound), and with --embeddings llama-server lowers -b to -ub; so -ub must hold the longest input: 765
// positions for a sound under 29.99 s, 1,515 for a 30 s one, hence -b 2048 -ub 2048, and a context of at least as
// many positions per slot.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {readGgufMetadata} from "../../src/models/gguf-writer.ts";
import {freePort} from "../../support/llama-replicas.ts";
import {ensureLlamaServer} from "../../support/llama-server/build.ts";
import {startLlamaServer, type Server} from "../../support/llama-server/servers.ts";
import {get, post} from "../../support/server.ts";
import {encodeWav, sine, type Audio} from "../../support/speech-audio.ts";
import {gaussian, TEST_EMBEDDING_MODEL_SHAPE, testEmbeddingModelPath} from "../../support/test-model.ts";
import {TEST_AUDIO_PROJECTOR_TYPE, TEST_PROJECTOR_AUDIO_CHUNK_TOKENS} from "../../support/test-projector-audio.ts";
import {embeddingWidth, TEST_PROJECTOR_IMAGE_TOKENS, testPng, testProjectorPath} from "../../support/test-projector.ts";

const WIDTH = TEST_EMBEDDING_MODEL_SHAPE.width;

/** The llama-server options the embedding side model needs beyond the usual ones (see the top of the file). */
const EMBEDDING_FLAGS = ["--embeddings", "--pooling", "mean", "-b", "2048", "-ub", "2048"];

let server: Server | undefined;
let textModel = "";
let projector = "";
let marker = "";

/** A picture: a diagonal colour ramp. */
const RAMP = testPng(96, 64, (x, y) => [(x * 255) / 95, (y * 255) / 63, ((x + y) * 255) / 158]);

/** Seeded white noise at 16 kHz, mono. */
function noise(seconds: number, amplitude: number, seed: number): Audio {
  const next = gaussian(seed);
  const y = new Float32Array(Math.round(seconds * 16_000));
  for (let i = 0; i < y.length; i++) y[i] = Math.max(-1, Math.min(1, next() * amplitude));
  return {rate: 16_000, channels: [y]};
}

/** Sounds: one second of a 440 Hz tone, and 30 s of noise at 16 kHz. */
const TONE = encodeWav(sine({rate: 16_000, seconds: 1, hz: 440, amplitude: 0.5}));
const LONG = encodeWav(noise(30, 0.2, 30));

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
/** A prompt of one picture or sound alone: the media marker, and the file beside it. */
const media = (bytes: Uint8Array) => ({prompt_string: marker, multimodal_data: [base64(bytes)]});

/** /embeddings (llama-server's own shape: "content" in, [{index, embedding: [vector]}] out) for each input. */
async function embed(...content: unknown[]): Promise<{vectors: number[][]; ms: number}> {
  const t = performance.now();
  const res = await post(`${server!.url}/embeddings`, {content});
  const ms = performance.now() - t;
  assert.equal(res.status, 200, res.text);
  const items = [...(res.body as {index: number; embedding: number[][]}[])].sort((a, b) => a.index - b.index);
  assert.deepEqual(items.map((i) => i.index), content.map((_, i) => i));
  return {vectors: items.map((i) => {
    assert.equal(i.embedding.length, 1, "pooled: one vector per input");
    return i.embedding[0]!;
  }), ms};
}

/** The positions one input takes (the OpenAI-style route reports them as prompt_tokens). */
async function positions(input: unknown): Promise<number> {
  const res = await post(`${server!.url}/v1/embeddings`, {input: [input]});
  assert.equal(res.status, 200, res.text);
  return res.body.usage.prompt_tokens as number;
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

function assertVector(v: number[]) {
  assert.equal(v.length, WIDTH);
  assert.ok(v.every(Number.isFinite), "finite");
  assert.ok(Math.abs(Math.sqrt(dot(v, v)) - 1) < 1e-3, "unit length (the server normalizes by default)");
}

before(async () => {
  const build = ensureLlamaServer({log: (line) => process.stderr.write(`llama-server build: ${line}\n`)});
  textModel = await testEmbeddingModelPath();
  projector = await testProjectorPath(textModel, {audio: true});
  server = await startLlamaServer(build.binary, {gguf: textModel, threads: 1, regions: 1, ctxPerRegion: 4096}, await freePort(),
    ["--mmproj", projector, ...EMBEDDING_FLAGS, "-lv", "4"]); // verbosity 4: the log carries mtmd's lines (each batch)
  marker = (await get(`${server.url}/props`)).body.media_marker;
});

after(async () => {
  await server?.stop();
});

describe("the embedding test assets in llama-server", {concurrency: 1}, () => {
  test("the model is 768 wide; the projector has a gemma3 vision tower and a qwen2a audio tower to that width", async () => {
    assert.equal(await embeddingWidth(textModel), WIDTH);
    assert.match(textModel, /svc-test-embedding-model-v\d+-w768\.gguf$/);
    const {metadata, tensorCount} = await readGgufMetadata(projector);
    assert.match(projector, /svc-test-projector-av-v\d+-w768\.gguf$/);
    assert.equal(metadata.get("clip.projector_type"), undefined, "each tower names its own type");
    assert.equal(metadata.get("clip.vision.projector_type")?.value, "gemma3");
    assert.equal(metadata.get("clip.audio.projector_type")?.value, TEST_AUDIO_PROJECTOR_TYPE);
    assert.equal(metadata.get("clip.has_vision_encoder")?.value, true);
    assert.equal(metadata.get("clip.has_audio_encoder")?.value, true);
    assert.equal(metadata.get("clip.vision.projection_dim")?.value, WIDTH);
    assert.equal(metadata.get("clip.audio.projection_dim")?.value, WIDTH);
    // vision: 39 (as the vision-only file); audio: 2 convs with biases, positions, 15 per layer, post-norm, projection
    assert.equal(tensorCount, 39 + 5 + 15 * 2 + 2 + 2);
    assert.notEqual(await testProjectorPath(textModel), projector, "the vision-only file is another");
  });

  test("the server reports vision and audio", async () => {
    const props = await get(`${server!.url}/props`);
    assert.equal(props.status, 200);
    assert.equal(props.body.modalities.vision, true);
    assert.equal(props.body.modalities.audio, true);
    assert.ok(marker.length > 0, "a media marker");
    assert.ok(server!.log.some((l) => /projector:\s+gemma3/.test(l)) && server!.log.some((l) => /projector:\s+qwen2a/.test(l)), "the log names both");
  });

  test("text, a picture and a sound in one request are three 768-wide vectors, all different", async (t) => {
    const {vectors, ms} = await embed("some text", media(RAMP), media(TONE));
    assert.equal(vectors.length, 3);
    for (const v of vectors) assertVector(v);
    assert.notDeepEqual(vectors[0], vectors[1]);
    assert.notDeepEqual(vectors[1], vectors[2]);
    assert.notDeepEqual(vectors[0], vectors[2]);
    assert.ok(server!.log.some((l) => new RegExp(`decoding image batch 1/1, n_tokens_batch = ${TEST_PROJECTOR_IMAGE_TOKENS}\\b`).test(l)));
    assert.ok(server!.log.some((l) => new RegExp(`decoding audio batch 1/1, n_tokens_batch = ${TEST_PROJECTOR_AUDIO_CHUNK_TOKENS}\\b`).test(l)));
    t.diagnostic(`text + picture + 1 s sound: ${Math.round(ms)} ms`);
  });

  test("a 1 s sound is one 750-embedding chunk; a 30 s 16 kHz mono WAV is two, and fits", async (t) => {
    const picture = await positions(media(RAMP));
    const short = await positions(media(TONE));
    const long = await positions(media(LONG));
    const markers = short - TEST_PROJECTOR_AUDIO_CHUNK_TOKENS; // the BOS and the text of <|audio_bos|> / <|audio_eos|>
    assert.ok(markers > 0 && markers < 20, `${markers} positions of markers`);
    assert.equal(long, 2 * TEST_PROJECTOR_AUDIO_CHUNK_TOKENS + markers);
    const thirty = await embed(media(LONG));
    assertVector(thirty.vectors[0]!);
    t.diagnostic(`positions: picture ${picture}, 1 s sound ${short}, 30 s sound ${long}; embedding time: 30 s sound ${Math.round(thirty.ms)} ms`);
  });
});
