// embeddingnx-2 on a real engine: the generated 768-wide test embedding model with the test projector that reads
// pictures and sound (support/test-model.ts, support/test-projector.ts), named as embeddingnx-2=<model>+<projector>,
// in its supervised llama-server child. Through the official openai client: mixed inputs in order, unit vectors of
// 768, dimensions renormalised, base64 and float the same, prompt_name, and each limit refused by input.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {get, post, startServer, type OwnServer} from "../../support/server.ts";
import {encodeWav, sine} from "../../support/speech-audio.ts";
import {testEmbeddingModelPath} from "../../support/test-model.ts";
import {testPng, testProjectorPath} from "../../support/test-projector.ts";

let server: OwnServer;
let client: OpenAI;
const MODEL = "embeddingnx-2";

const picture = (png: Buffer) => ({type: "image_url", image_url: {url: `data:image/png;base64,${png.toString("base64")}`}});
const clip = (seconds: number, hz = 440) => ({type: "input_audio", input_audio: {format: "wav",
  data: Buffer.from(encodeWav(sine({rate: 16000, seconds, hz, amplitude: 0.3}))).toString("base64")}});
const RAMP = testPng(96, 64, (x, y) => [(x * 255) / 95, (y * 255) / 63, 90]);
const RINGS = testPng(96, 64, (x, y) => (Math.hypot(x - 48, y - 32) % 16 < 8 ? [230, 40, 40] : [20, 60, 220]));

/** The SDK's embeddings call with inputs it does not type (pictures and clips); base64 unless asked otherwise, as the SDK does. */
async function embed(input: unknown[], extra: Record<string, unknown> = {}): Promise<number[][]> {
  const r = await client.embeddings.create({model: MODEL, input: input as string[], ...extra});
  assert.deepEqual(r.data.map((d) => d.index), input.map((_, i) => i));
  return r.data.map((d) => d.embedding);
}

const norm = (v: number[]) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
const close = (a: number[], b: number[], eps = 1e-5) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]!) <= eps);

before(async () => {
  const model = await testEmbeddingModelPath();
  const projector = await testProjectorPath(model, {audio: true});
  server = await startServer({SVC_NPU_MODELS: `${MODEL}=${model}+${projector}`}, 600_000);
  client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0});
});

after(async () => {
  await server?.stop();
});

describe("embeddingnx-2: texts, pictures and sound in one space", {concurrency: 1}, () => {
  test("a text, a picture and a clip in one request: 768-wide unit vectors, in order, each as it is alone", async () => {
    const [text, pic, sound] = await embed(["a red circle", picture(RAMP), clip(1)]);
    for (const v of [text!, pic!, sound!]) {
      assert.equal(v.length, 768);
      assert.ok(Math.abs(norm(v) - 1) < 1e-4);
    }
    assert.ok(close((await embed([picture(RAMP)]))[0]!, pic!), "the picture's vector is the one it gets alone");
    assert.ok(close((await embed(["a red circle"]))[0]!, text!), "the text's vector is the one it gets alone");
    assert.ok(!close(text!, pic!) && !close(pic!, sound!), "a text, a picture and a sound are different points");
    const [ramp, rings] = await embed([picture(RAMP), picture(RINGS)]);
    assert.ok(!close(ramp!, rings!), "two pictures differ");
  });

  test("dimensions keeps the first values and renormalises; float and base64 are the same numbers", async () => {
    const [full] = await embed(["a red circle"], {encoding_format: "float"});
    const [cut] = await embed(["a red circle"], {dimensions: 64});
    const head = full!.slice(0, 64);
    const scale = norm(head);
    assert.equal(cut!.length, 64);
    assert.ok(close(cut!, head.map((x) => x / scale), 1e-5));
  });

  test("prompt_name puts the model's query or document prompt before texts, which moves their vectors", async () => {
    const [plain] = await embed(["a red circle"]);
    const [query] = await embed(["a red circle"], {prompt_name: "query"} as never);
    assert.ok(!close(plain!, query!));
    const usage = (await post(`${server.url}/v1/embeddings`, {model: MODEL, input: ["a red circle"], prompt_name: "document"})).body.usage;
    const bare = (await post(`${server.url}/v1/embeddings`, {model: MODEL, input: ["a red circle"]})).body.usage;
    assert.ok(usage.prompt_tokens > bare.prompt_tokens, "the prompt's tokens are counted");
  });

  test("each over-limit input is a 400 naming it; the next request is served", async () => {
    const refused = async (body: Record<string, unknown>, param: string, rule: RegExp) => {
      const r = await post(`${server.url}/v1/embeddings`, {model: MODEL, ...body});
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.param, param, r.text);
      assert.match(r.body.error.message, rule);
    };
    await refused({input: ["ok", clip(30.5)]}, "input[1].input_audio.data", /30\.50 s of sound; embeddingnx-2 reads at most 30 s/);
    await refused({input: Array.from({length: 65}, () => picture(RAMP))}, "input", /65 pictures and clips/);
    await refused({input: ["word ".repeat(8300)]}, "input[0]", /tokens; embeddingnx-2 reads at most 8192 per text/);
    await refused({input: ["x"], dimensions: 769}, "dimensions", /from 32 to 768/);
    await refused({input: [picture(RAMP.subarray(0, 40))]}, "input[0].image_url.url", /could not be decoded/);
    assert.equal((await embed(["still here"])).length, 1);
  });

  test("/health lists the model and its llama-server child", async () => {
    const health = (await get(`${server.url}/health`)).body;
    const child = health.children.find((c: {name: string}) => c.name === MODEL);
    assert.equal(child?.state, "ready");
    assert.ok(health.side_models.models.some((m: {id: string}) => m.id === MODEL));
  });
});
