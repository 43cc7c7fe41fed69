// Pictures in, on a real engine: the test model with the generated test projector (support/test-projector.ts: a
// gemma3-type tower, 16 embeddings per picture) given as SVC_MMPROJ, so the server runs the model in its own
// llama-server child. Each route through its official SDK, streamed and not; usage and count_tokens with the
// picture's positions; the prompt cache keyed by the picture; and what a picture rules out.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import {createAnthropic} from "@ai-sdk/anthropic";
import {createOpenAI} from "@ai-sdk/openai";
import {generateText, streamText, type ModelMessage} from "ai";
import OpenAI from "openai";
import sharp from "sharp";
import {get, post, startServer, type OwnServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";
import {TEST_PROJECTOR_IMAGE_TOKENS, testPng, testProjectorPath} from "../../support/test-projector.ts";
import {collectErrors, launch} from "./browser.ts";

let server: OwnServer;
let openai: OpenAI;
let anthropic: Anthropic;

/** Two pictures that differ everywhere: a colour ramp and rings. */
const RAMP = testPng(96, 64, (x, y) => [(x * 255) / 95, (y * 255) / 63, ((x + y) * 255) / 158]);
const RINGS = testPng(96, 64, (x, y) => (Math.hypot(x - 48, y - 32) % 16 < 8 ? [230, 40, 40] : [20, 60, 220]));
const dataUrl = (png: Buffer, type = "image/png") => `data:${type};base64,${png.toString("base64")}`;
const QUESTION = "Describe this picture.";
const MAX = 24;

type ChatPart = OpenAI.Chat.Completions.ChatCompletionContentPart;

async function chat(parts: ChatPart[], extra: Record<string, unknown> = {}) {
  return openai.chat.completions.create({model: "svc", messages: [{role: "user", content: parts}], max_tokens: MAX, temperature: 0, ...extra} as never) as
    Promise<OpenAI.Chat.Completions.ChatCompletion>;
}

/** A 24-bit bottom-up BMP of a picture (sharp writes no BMP). */
async function bmp24(png: Buffer): Promise<Buffer> {
  const {data, info} = await sharp(png).removeAlpha().raw().toBuffer({resolveWithObject: true});
  const row = Math.ceil((info.width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + row * info.height);
  out.write("BM", 0, "latin1");
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(info.width, 18);
  out.writeInt32LE(info.height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(row * info.height, 34);
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      const src = (y * info.width + x) * 3;
      const dst = 54 + (info.height - 1 - y) * row + x * 3;
      out[dst] = data[src + 2]!;
      out[dst + 1] = data[src + 1]!;
      out[dst + 2] = data[src]!;
    }
  }
  return out;
}

const picture = (png: Buffer): ChatPart => ({type: "image_url", image_url: {url: dataUrl(png)}});
const text = (t: string): ChatPart => ({type: "text", text: t});

before(async () => {
  const model = await testModelPath();
  server = await startServer({SVC_MODEL: model, SVC_MMPROJ: await testProjectorPath(model), SVC_PARALLEL: "2"}, 600_000);
  openai = new OpenAI({baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0});
  anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0});
});

after(async () => {
  await server?.stop();
});

describe("pictures on the main model (SVC_MMPROJ)", {concurrency: 1}, () => {
  test("/props and /health say the model reads pictures; its llama-server is a supervised child", async () => {
    const props = await get(`${server.url}/props`);
    assert.deepEqual(props.body.modalities, {vision: true, audio: false});
    const health = await get(`${server.url}/health`);
    const child = health.body.children.find((c: {name: string}) => c.name === "main-vision");
    assert.equal(child?.state, "ready");
    assert.match(health.body.prompt_cache.greedy_output, /not promised byte-identical/);
    assert.ok(health.body.engine.remote.limits.some((l: string) => /picture/.test(l)));
  });

  // llama-server does not promise the same numbers for a prompt read cold and one resumed from its cache (the
  // engine's limit, said in /health), so replies are compared between requests that start from the same cache
  // state: each prompt is sent once first, and every compared request resumes it whole.
  test("chat: the same picture gives the same reply at temperature 0; another picture another one", async () => {
    await chat([picture(RAMP), text(QUESTION)]);
    const a = await chat([picture(RAMP), text(QUESTION)]);
    const b = await chat([picture(RAMP), text(QUESTION)]);
    const c = await chat([picture(RINGS), text(QUESTION)]);
    assert.ok(a.choices[0]!.message.content!.length > 0);
    assert.equal(b.choices[0]!.message.content, a.choices[0]!.message.content);
    assert.notEqual(c.choices[0]!.message.content, a.choices[0]!.message.content);
  });

  test("chat streamed through the SDK's stream helper gives the non-streamed reply", async () => {
    const whole = await chat([picture(RAMP), text(QUESTION)]);
    const stream = openai.chat.completions.stream({model: "svc", messages: [{role: "user", content: [picture(RAMP), text(QUESTION)]}],
      max_tokens: MAX, temperature: 0});
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, whole.choices[0]!.message.content);
  });

  test("usage counts the picture's positions: its 16 embeddings and the markers mtmd writes around them", async () => {
    const plain = await chat([text(QUESTION)]);
    const withPicture = await chat([picture(RAMP), text(QUESTION)]);
    // mtmd writes each marker as text of its own, tokenized apart (SmolLM2's vocabulary has no such special tokens).
    const count = async (t: string) => (await post(`${server.url}/tokenize`, {content: t})).body.tokens.length as number;
    const markers = (await count("<start_of_image>")) + (await count("<end_of_image>"));
    assert.equal(withPicture.usage!.prompt_tokens - plain.usage!.prompt_tokens, TEST_PROJECTOR_IMAGE_TOKENS + markers);
    const counted = await anthropic.messages.countTokens({model: "svc", messages: [{role: "user", content: [
      {type: "image", source: {type: "base64", media_type: "image/png", data: RAMP.toString("base64")}}, {type: "text", text: QUESTION}]}]});
    assert.ok(counted.input_tokens > TEST_PROJECTOR_IMAGE_TOKENS);
  });

  test("the prompt cache resumes past a repeated picture and not past a changed one", async () => {
    const turn = (png: Buffer) => chat([text("Look at this picture, then answer."), picture(png), text(QUESTION)]);
    await turn(RINGS);
    const again = await turn(RINGS);
    const changed = await turn(RAMP);
    const prompt = again.usage!.prompt_tokens;
    const cachedAgain = again.usage!.prompt_tokens_details?.cached_tokens ?? 0;
    const cachedChanged = changed.usage!.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cachedAgain > prompt - 8, `a repeat resumes past the picture (${cachedAgain} of ${prompt})`);
    assert.ok(cachedChanged < prompt - TEST_PROJECTOR_IMAGE_TOKENS, `a changed picture is evaluated again (${cachedChanged} of ${prompt})`);
  });

  test("JPEG, WebP, GIF and BMP pictures are read too, and bare base64 as well as data URLs", async () => {
    const raw = sharp(RAMP);
    for (const [type, bytes] of [["image/jpeg", await raw.clone().jpeg().toBuffer()], ["image/webp", await raw.clone().webp().toBuffer()],
      ["image/gif", await raw.clone().gif().toBuffer()], ["image/bmp", await bmp24(RAMP)]] as const) {
      const r = await chat([{type: "image_url", image_url: {url: dataUrl(bytes, type)}}, text(QUESTION)], {max_tokens: 2});
      assert.ok(r.usage!.prompt_tokens > TEST_PROJECTOR_IMAGE_TOKENS, type);
    }
    // The same pixels as BMP and as PNG are the same picture to the model: one PNG, so one cache key.
    await chat([picture(RAMP), text(QUESTION)], {max_tokens: 2});
    const asBmp = await chat([{type: "image_url", image_url: {url: dataUrl(await bmp24(RAMP), "image/bmp")}}, text(QUESTION)], {max_tokens: 2});
    assert.equal(asBmp.usage!.prompt_tokens_details?.cached_tokens, asBmp.usage!.prompt_tokens - 1, "the BMP resumes the PNG's cached prompt");
    const bare = await chat([{type: "image_url", image_url: {url: RAMP.toString("base64")}}, text(QUESTION)]);
    const viaUrl = await chat([picture(RAMP), text(QUESTION)]);
    assert.equal(bare.choices[0]!.message.content, viaUrl.choices[0]!.message.content);
  });

  test("Messages: an image block through @anthropic-ai/sdk, streamed and not, gives the chat reply", async () => {
    const content: Anthropic.ContentBlockParam[] = [{type: "image", source: {type: "base64", media_type: "image/png", data: RAMP.toString("base64")}},
      {type: "text", text: QUESTION}];
    const ask = {model: "svc", max_tokens: MAX, temperature: 0, messages: [{role: "user" as const, content}]};
    await anthropic.messages.create(ask);
    const whole = await anthropic.messages.create(ask);
    const streamed = await anthropic.messages.stream(ask).finalMessage();
    const textOf = (m: Anthropic.Message) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    assert.equal(textOf(streamed), textOf(whole));
    assert.equal(streamed.stop_reason, whole.stop_reason);
    // Anthropic's input_tokens leaves out what was read from the cache.
    assert.ok(whole.usage.input_tokens + (whole.usage.cache_read_input_tokens ?? 0) > TEST_PROJECTOR_IMAGE_TOKENS);
  });

  test("Responses: input_image in a message and in a function_call_output, streamed and not", async () => {
    const input: OpenAI.Responses.ResponseInput = [{role: "user", content: [{type: "input_image", image_url: dataUrl(RAMP), detail: "auto"},
      {type: "input_text", text: QUESTION}]}];
    await openai.responses.create({model: "svc", input, max_output_tokens: MAX, temperature: 0});
    const whole = await openai.responses.create({model: "svc", input, max_output_tokens: MAX, temperature: 0});
    const streamed = await openai.responses.stream({model: "svc", input, max_output_tokens: MAX, temperature: 0}).finalResponse();
    assert.equal(streamed.output_text, whole.output_text);
    assert.ok(whole.usage!.input_tokens > TEST_PROJECTOR_IMAGE_TOKENS);
    const toolTurn = await openai.responses.create({model: "svc", max_output_tokens: 4, temperature: 0, input: [
      {role: "user", content: "Take a screenshot."},
      {type: "function_call", call_id: "c1", name: "screenshot", arguments: "{}"},
      {type: "function_call_output", call_id: "c1", output: [{type: "input_image", image_url: dataUrl(RINGS), detail: "auto"}]},
    ], tools: [{type: "function", name: "screenshot", parameters: {type: "object", properties: {}}, strict: false}]});
    assert.ok(toolTurn.usage!.input_tokens > TEST_PROJECTOR_IMAGE_TOKENS, "the tool output's picture is in the prompt");
  });

  test("the Vercel AI SDK: a picture through its OpenAI chat, OpenAI Responses and Anthropic providers, generated and streamed", async () => {
    const openaiProvider = createOpenAI({baseURL: `${server.url}/v1`, apiKey: "x"});
    const anthropicProvider = createAnthropic({baseURL: `${server.url}/v1`, apiKey: "x"});
    const messages: ModelMessage[] = [{role: "user", content: [{type: "image", image: new Uint8Array(RAMP), mediaType: "image/png"},
      {type: "text", text: QUESTION}]}];
    for (const [name, model] of [["chat", openaiProvider.chat("svc")], ["responses", openaiProvider.responses("svc")],
      ["messages", anthropicProvider("svc")]] as const) {
      const ask = {model, messages, maxOutputTokens: MAX, temperature: 0, maxRetries: 0};
      await generateText(ask);
      const whole = await generateText(ask);
      const streamed = await streamText(ask).text;
      assert.equal(streamed, whole.text, name);
      const input = (whole.usage.inputTokens ?? 0);
      assert.ok(input > TEST_PROJECTOR_IMAGE_TOKENS, `${name}: the picture's positions are in the usage (${input})`);
    }
  });

  test("refused: a schema, logprobs, a URL to fetch, a corrupt picture, control-token text; the next request is served", async () => {
    const body = (content: unknown[], extra: Record<string, unknown> = {}) => ({messages: [{role: "user", content}], max_tokens: 2, ...extra});
    const img = {type: "image_url", image_url: {url: dataUrl(RAMP)}};
    const refused = async (b: unknown, param: string, rule: RegExp) => {
      const r = await post(`${server.url}/v1/chat/completions`, b);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.param, param, r.text);
      assert.match(r.body.error.message, rule);
    };
    await refused(body([img], {response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "object"}}}}),
      "response_format.json_schema.schema", /with a picture/);
    await refused(body([img], {logprobs: true, max_tokens: 1, temperature: 0}), "logprobs", /picture/);
    await refused(body([{type: "image_url", image_url: {url: "https://example.com/cat.png"}}]), "messages[0].content[0].image_url.url",
      /no URL is ever fetched/);
    await refused(body([{type: "text", text: "hi"}, {type: "image_url", image_url: {url: dataUrl(RAMP.subarray(0, 60))}}]),
      "messages[0].content[1].image_url.url", /could not be decoded/);
    await refused(body([img, {type: "text", text: "<|im_end|>"}]), "messages", /control token/);
    const ok = await chat([picture(RAMP), text(QUESTION)], {max_tokens: 2});
    assert.equal(ok.choices.length, 1);
  });

  test("its llama-server killed with SIGKILL is restarted; meanwhile requests get an error body (never a hang), then the next is served", async () => {
    const child = () => get(`${server.url}/health`).then((r) => r.body.children.find((c: {name: string}) => c.name === "main-vision"));
    const before = await child();
    process.kill(before.pid, "SIGKILL");
    const statuses: number[] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await post(`${server.url}/v1/chat/completions`, {messages: [{role: "user", content: [picture(RAMP), text(QUESTION)]}], max_tokens: 2});
      statuses.push(r.status);
      if (r.status === 200) break;
      // 503 while no replica answers (with Retry-After), 502 for a reply cut off mid-way; never a 500.
      assert.ok((r.status === 503 || r.status === 502) && typeof r.body.error?.message === "string", r.text);
      assert.ok(Date.now() < deadline, `not served again within a minute: ${statuses.join(",")}`);
      await new Promise((res) => setTimeout(res, 250));
    }
    // The new llama-server can answer a request a moment before the supervisor's readiness poll (every 100 ms) sees it.
    let after = await child();
    for (let i = 0; i < 50 && after.state !== "ready"; i++) {
      await new Promise((res) => setTimeout(res, 100));
      after = await child();
    }
    assert.equal(after.state, "ready");
    assert.equal(after.restarts, before.restarts + 1);
    assert.notEqual(after.pid, before.pid);
  });

  test("the playground: a dropped and a pasted picture go with the message, and the reply counts them", async () => {
    const browser = await launch();
    try {
      const page = await browser.newPage();
      const errors = collectErrors(page);
      await page.goto(server.url);
      const file = async (name: string, png: Buffer) => page.evaluateHandle(([n, b64]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([Uint8Array.from(atob(b64!), (c) => c.charCodeAt(0))], n!, {type: "image/png"}));
        return dt;
      }, [name, png.toString("base64")]);
      await page.locator(".composer").dispatchEvent("drop", {dataTransfer: await file("ramp.png", RAMP)});
      await page.getByTestId("attached-picture").first().waitFor();
      // A paste as the browser delivers one (Playwright's dispatchEvent makes no ClipboardEvent).
      await page.evaluate(([b64]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([Uint8Array.from(atob(b64!), (c) => c.charCodeAt(0))], "rings.png", {type: "image/png"}));
        document.querySelector("[data-testid=composer]")!.dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}));
      }, [RINGS.toString("base64")]);
      await page.getByTestId("attached-picture").nth(1).waitFor();
      // The test model never ends a reply by itself: a budget keeps it short.
      await page.getByTestId("field-max_tokens").fill("4");
      await page.getByTestId("composer").fill(QUESTION);
      await page.getByTestId("composer").press("Enter");
      await page.locator("[data-testid=assistant-msg]:last-child:not([data-state=streaming])").waitFor({timeout: 60_000});
      assert.equal(await page.getByTestId("assistant-msg").last().getAttribute("data-state"), "done");
      assert.equal(await page.locator("[data-testid=user-msg] img").count(), 2, "the sent message shows its pictures");
      assert.equal(await page.getByTestId("attached-picture").count(), 0, "the composer is cleared");
      const line = await server.waitForLog(/route=chat status=200 stream=true .*prompt=(\d+)/);
      assert.ok(Number(/prompt=(\d+)/.exec(line)![1]) > 2 * TEST_PROJECTOR_IMAGE_TOKENS, line);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });

  test("/apply-template shows where each picture goes as [picture N]", async () => {
    const r = await post(`${server.url}/apply-template`, {messages: [{role: "user", content: [picture(RAMP), text("and"), picture(RINGS)]}]});
    assert.equal(r.status, 200, r.text);
    assert.match(r.body.prompt, /\[picture 1\]and\[picture 2\]/);
    assert.doesNotMatch(r.body.prompt, /svc-media/);
  });

  test("a strict tool on a request with a picture is served unenforced and counted", async () => {
    const before = (await get(`${server.url}/health`)).body.structured_output.strict_tools.unenforced_total as number;
    await chat([picture(RAMP), text(QUESTION)], {max_tokens: 2,
      tools: [{type: "function", function: {name: "f", strict: true, parameters: {type: "object", properties: {a: {type: "string"}}, required: ["a"],
        additionalProperties: false}}}]});
    const afterCount = (await get(`${server.url}/health`)).body.structured_output.strict_tools.unenforced_total as number;
    assert.equal(afterCount, before + 1);
    await server.waitForLog(/strict.*the request holds a picture/);
  });
});
