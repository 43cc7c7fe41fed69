// The test projector (support/test-projector.ts) in a real engine: llama-server built from the llama.cpp source
// node-llama-cpp bundles, on the test model with the projector beside it (--mmproj), one server for the file. Checks
// what the vision tests will lean on: the server says it sees images, an image is answered, the same image gives the
// same reply at temperature 0 and another image another distribution, and the image costs the prompt exactly its
// embeddings plus the markers that frame them. Slow tier: it builds llama-server on first use (minutes; reused after).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {readGgufMetadata} from "../../src/models/gguf-writer.ts";
import {freePort} from "../../support/llama-replicas.ts";
import {ensureLlamaServer} from "../../support/llama-server/build.ts";
import {startLlamaServer, type Server} from "../../support/llama-server/servers.ts";
import {get, post} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";
import {embeddingWidth, TEST_PROJECTOR_IMAGE_TOKENS, testPng, testProjectorPath} from "../../support/test-projector.ts";

let server: Server | undefined;
let textModel = "";
let projector = "";

/** Two images that differ everywhere: a diagonal colour ramp, and rings. Neither is square, so mtmd resizes both. */
const RAMP = testPng(96, 64, (x, y) => [(x * 255) / 95, (y * 255) / 63, ((x + y) * 255) / 158]);
const RINGS = testPng(96, 64, (x, y) => {
  const r = Math.hypot(x - 48, y - 32);
  return r % 16 < 8 ? [230, 40, 40] : [20, 60, 220];
});

const dataUrl = (png: Buffer) => `data:image/png;base64,${png.toString("base64")}`;
const QUESTION = "Describe this picture.";

/** One greedy chat turn (the question, after the image if there is one), with the first reply token's top choices. */
async function ask(png?: Buffer) {
  const content = png ? [{type: "image_url", image_url: {url: dataUrl(png)}}, {type: "text", text: QUESTION}] : QUESTION;
  const res = await post(`${server!.url}/v1/chat/completions`, {messages: [{role: "user", content}], max_tokens: 8, temperature: 0, seed: 1,
    logprobs: true, top_logprobs: 5, cache_prompt: false}); // no cache: every request encodes its image afresh
  assert.equal(res.status, 200, res.text);
  const first = res.body.choices[0].logprobs.content[0].top_logprobs as {token: string; logprob: number}[];
  return {text: res.body.choices[0].message.content as string, promptTokens: res.body.usage.prompt_tokens as number, first};
}

/** Tokens the text model's tokenizer makes of `text` alone (no BOS). */
async function tokenCount(text: string): Promise<number> {
  const res = await post(`${server!.url}/tokenize`, {content: text, add_special: false});
  assert.equal(res.status, 200, res.text);
  return (res.body.tokens as number[]).length;
}

before(async () => {
  const build = ensureLlamaServer({log: (line) => process.stderr.write(`llama-server build: ${line}\n`)});
  textModel = await testModelPath();
  projector = await testProjectorPath(textModel);
  server = await startLlamaServer(build.binary, {gguf: textModel, threads: 1, regions: 1, ctxPerRegion: 2048}, await freePort(),
    ["--mmproj", projector, "-lv", "4"]); // verbosity 4: the log carries mtmd's own lines (the projector, each image's batch)
});

after(async () => {
  await server?.stop();
});

describe("the test projector in llama-server", {concurrency: 1}, () => {
  test("the file is a gemma3 projector to the text model's width, and small", async () => {
    const {metadata, tensorCount} = await readGgufMetadata(projector);
    assert.equal(metadata.get("clip.projector_type")?.value, "gemma3");
    assert.equal(metadata.get("clip.has_vision_encoder")?.value, true);
    assert.equal(metadata.get("clip.vision.projection_dim")?.value, await embeddingWidth(textModel));
    // patch conv + bias, positions, 16 per layer, post-norm pair, soft norm and projection
    assert.equal(tensorCount, 3 + 16 * 2 + 2 + 2);
    assert.equal(await testProjectorPath(textModel), projector, "reused, not rewritten");
  });

  test("the server reports vision (and no audio)", async () => {
    const props = await get(`${server!.url}/props`);
    assert.equal(props.status, 200);
    assert.equal(props.body.modalities.vision, true);
    assert.equal(props.body.modalities.audio, false);
    assert.ok(server!.log.some((l) => /projector:\s+gemma3/.test(l)), "the log names the projector");
  });

  test("an image is answered, the same at temperature 0 each time", async () => {
    const a = await ask(RAMP);
    const b = await ask(RAMP);
    assert.ok(a.text.length > 0, "a reply");
    assert.equal(b.text, a.text);
    assert.deepEqual(b.first, a.first);
    assert.ok(server!.log.some((l) => /decoding image batch 1\/1, n_tokens_batch = 16\b/.test(l)), "the image went in as 16 embeddings");
  });

  test("another image moves the reply's distribution", async () => {
    const a = await ask(RAMP);
    const c = await ask(RINGS);
    assert.notDeepEqual(c.first, a.first);
  });

  test("the image costs the prompt its 16 embeddings and the markers around them", async () => {
    const plain = await ask();
    const withImage = await ask(RAMP);
    const markers = (await tokenCount("<start_of_image>")) + (await tokenCount("<end_of_image>"));
    assert.equal(TEST_PROJECTOR_IMAGE_TOKENS, 16);
    assert.equal(withImage.promptTokens - plain.promptTokens, TEST_PROJECTOR_IMAGE_TOKENS + markers);
  });
});
