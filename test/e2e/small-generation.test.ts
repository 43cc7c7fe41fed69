// Small generation (`model: nx3.5-2b`) on POST /v1/chat/completions, on the test model (SmolLM2's tokenizer,
// template and 8,192-token training context; nothing below judges an answer's sense): answers
// streamed or not through the official openai client (strict stream helper), usage and timings, stop
// strings, the sampling defaults, text only and thinking off, and the prompt and budget limits at their edges
// (the 8,191-token prompt, slow here, is in test/slow/small-generation-limits.test.ts).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {get, post, readSse, startServer, TIMING_FIELDS, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";

const M = "nx3.5-2b";
let server: RunningServer;
let client: OpenAI;
let chatUrl: string;

before(async () => {
  server = await startServer({SVC_NPU_MODELS: `${M}=${await testModelPath()}`, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});
  client = server.client;
  chatUrl = `${server.url}/v1/chat/completions`;
});
after(async () => {
  await server?.stop();
});

const ask = (content: string) => [{role: "user" as const, content}];
type WithTimings = {timings: Record<string, number>};

describe("small generation: answers", () => {
  test("non-streamed: the openai client gets an answer naming nx3.5-2b, with usage and all nine timings", async () => {
    const res = await client.chat.completions.create({model: M, messages: ask("Name a colour."), max_tokens: 16});
    assert.equal(res.object, "chat.completion");
    assert.equal(res.model, M);
    const choice = res.choices[0]!;
    assert.equal(choice.message.role, "assistant");
    assert.ok(typeof choice.message.content === "string" && choice.message.content.length > 0);
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal((choice.message as {reasoning_content?: string}).reasoning_content, undefined, "thinking is off: no reasoning");
    assert.ok(choice.finish_reason === "stop" || choice.finish_reason === "length");
    const usage = res.usage!;
    assert.ok(usage.prompt_tokens > 5);
    assert.ok(usage.completion_tokens >= 1 && usage.completion_tokens <= 16);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert.equal(usage.prompt_tokens_details?.cached_tokens, 0, "the small model keeps no prompt cache");
    assert.equal(usage.completion_tokens_details?.reasoning_tokens, 0);
    const timings = (res as unknown as WithTimings).timings;
    assert.deepEqual(Object.keys(timings).sort(), [...TIMING_FIELDS].sort());
    assert.equal(timings.prompt_n, usage.prompt_tokens);
    assert.equal(timings.predicted_n, usage.completion_tokens);
  });

  test("streamed: stream().finalChatCompletion() accepts it; the usage chunk and timings come last", async () => {
    const stream = client.chat.completions.stream({model: M, messages: ask("Say something about the sea."), max_tokens: 12, temperature: 0,
      stream_options: {include_usage: true}});
    const deltas: string[] = [];
    stream.on("content", (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    assert.equal(final.model, M);
    const content = final.choices[0]!.message.content ?? "";
    assert.ok(content.length > 0);
    assert.equal(deltas.join(""), content);
    assert.ok(final.usage!.completion_tokens >= 1 && final.usage!.completion_tokens <= 12);
    // The same request non-streamed gives the same text (greedy), and the raw stream carries timings at its end.
    const plain = await client.chat.completions.create({model: M, messages: ask("Say something about the sea."), max_tokens: 12, temperature: 0});
    assert.equal(plain.choices[0]!.message.content, content);
    const res = await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({model: M, messages: ask("Say something about the sea."), max_tokens: 12, temperature: 0, stream: true})});
    const {data} = await readSse(res);
    assert.equal(data.at(-1), "[DONE]");
    const last = data.at(-2);
    assert.equal(last.model, M);
    assert.ok(last.choices[0].finish_reason === "stop" || last.choices[0].finish_reason === "length");
    assert.deepEqual(Object.keys(last.timings).sort(), [...TIMING_FIELDS].sort());
    assert.equal(data.slice(0, -1).map((c: any) => c.choices[0]?.delta?.content ?? "").join(""), content);
  });

  test("a stop string ends the answer before it, with finish_reason stop", async () => {
    const body = {model: M, messages: ask("Count from one to ten in words, separated by commas."), max_tokens: 40, temperature: 0};
    const full = (await client.chat.completions.create(body)).choices[0]!.message.content!;
    assert.ok(full.length > 6, `the answer is long enough to cut: ${JSON.stringify(full)}`);
    // A stop string from the middle of the greedy answer: the answer must end right before its first occurrence.
    const at = Math.floor(full.length / 2);
    const stop = full.slice(at, at + 3);
    const cut = await client.chat.completions.create({...body, stop: [stop]});
    assert.equal(cut.choices[0]!.finish_reason, "stop");
    assert.equal(cut.choices[0]!.message.content, full.slice(0, full.indexOf(stop)));
    const streamed = await client.chat.completions.stream({...body, stop}).finalChatCompletion();
    assert.equal(streamed.choices[0]!.message.content, full.slice(0, full.indexOf(stop)));
    assert.equal(streamed.choices[0]!.finish_reason, "stop");
  });

  test("with no sampling set, the answer is the one of temperature 1.0, top_k 20, presence_penalty 2.0 (same seed)", async () => {
    const body = {model: M, messages: ask("Write one short sentence about a cat."), max_tokens: 24, seed: 1234};
    const implicit = await client.chat.completions.create(body);
    const explicit = await client.chat.completions.create({...body, temperature: 1.0, top_k: 20, presence_penalty: 2.0} as never) as OpenAI.ChatCompletion;
    assert.equal(implicit.choices[0]!.message.content, explicit.choices[0]!.message.content);
    assert.equal(implicit.usage!.completion_tokens, explicit.usage!.completion_tokens);
    // Each default can be overridden: greedy (temperature 0) gives the same answer whatever the seed.
    const g1 = await client.chat.completions.create({...body, temperature: 0, seed: 1});
    const g2 = await client.chat.completions.create({...body, temperature: 0, seed: 2});
    assert.equal(g1.choices[0]!.message.content, g2.choices[0]!.message.content);
  });

  test("a client that hangs up mid-stream frees the small model for the next request", async () => {
    const ac = new AbortController();
    const res = await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"}, signal: ac.signal,
      body: JSON.stringify({model: M, messages: ask("Write a very long story about a dragon."), max_tokens: 2000, stream: true})});
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0, "the stream started");
    ac.abort();
    await reader.cancel().catch(() => undefined);
    // Served only once the cancelled reply has let go of the one region (else: 503 after SVC_QUEUE_TIMEOUT).
    const next = await client.chat.completions.create({model: M, messages: ask("Hi"), max_tokens: 4});
    assert.equal(next.model, M);
    await server.waitForLog(/route=chat_small_generation status=499/, 10_000);
    const health = (await get(`${server.url}/health`)).body;
    assert.equal(health.side_models.running, false);
    assert.equal(health.side_models.queued, 0);
  });

  test("/health describes the small model: context, limits and defaults", async () => {
    const health = (await get(`${server.url}/health`)).body;
    const entry = health.side_models.models.find((m: {id: string}) => m.id === M);
    assert.equal(entry.kind, "small-generation");
    assert.equal(entry.route, "POST /v1/chat/completions");
    assert.equal(entry.context_size, 8192, "18,432 positions asked, clamped to the model's training context (8,192, as SmolLM2's)");
    assert.equal(entry.max_prompt_tokens, 8191);
    assert.equal(entry.max_tokens_default, 2048);
    assert.deepEqual(entry.sampling_defaults, {temperature: 1, top_k: 20, presence_penalty: 2});
    assert.ok(health.side_models.passes > 0, "the answers above ran as executor passes");
  });
});

describe("small generation: text only, thinking off", () => {
  const refusals: [string, Record<string, unknown>, string][] = [
    ["tools", {tools: [{type: "function", function: {name: "get_weather", parameters: {type: "object", properties: {}}}}]}, "tools"],
    ["a JSON schema", {response_format: {type: "json_schema", json_schema: {name: "a", schema: {type: "object"}}}}, "response_format"],
    ["logprobs", {logprobs: true, top_logprobs: 2}, "logprobs"],
    ["reasoning_effort high", {reasoning_effort: "high"}, "reasoning_effort"],
    ["enable_thinking true", {chat_template_kwargs: {enable_thinking: true}}, "chat_template_kwargs.enable_thinking"],
  ];
  for (const [name, extra, field] of refusals) {
    test(`${name}: 400 naming ${field}`, async () => {
      const err = await client.chat.completions.create({model: M, messages: ask("Hi"), max_tokens: 4, ...extra} as never).then(
        () => assert.fail("accepted"), (e: unknown) => e);
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.equal(err.status, 400);
      assert.equal(err.param, field);
      assert.match(err.message, new RegExp(`^400 ${field.replace(/\./g, "\\.")}: `));
      assert.match(err.message, field.includes("thinking") || field === "reasoning_effort" ? /thinking off/ : /small generation is text only/);
    });
  }

  test("thinking explicitly off and tool_choice none are accepted", async () => {
    const res = await client.chat.completions.create({model: M, messages: ask("Hi"), max_tokens: 4, reasoning_effort: "none" as never,
      tool_choice: "none", chat_template_kwargs: {enable_thinking: false}} as never) as OpenAI.ChatCompletion;
    assert.equal(res.model, M);
    assert.ok(res.usage!.completion_tokens >= 1);
  });
});

describe("small generation: limits at their edges", () => {
  /** A user message whose prompt (template included) is exactly n tokens: "a a a ..." adds one token per " a". */
  let base = 0;
  const content = (tokens: number) => "a" + " a".repeat(tokens - base);
  before(async () => {
    const one = await client.chat.completions.create({model: M, messages: ask("a"), max_tokens: 1});
    base = one.usage!.prompt_tokens;
    const more = await client.chat.completions.create({model: M, messages: ask("a" + " a".repeat(50)), max_tokens: 1});
    assert.equal(more.usage!.prompt_tokens, base + 50, "one token per repeat");
  });

  test("a prompt over 16,384 tokens is refused naming the limit", async () => {
    const res = await post(chatUrl, {model: M, messages: ask(content(16_385)), max_tokens: 1});
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, "context_length_exceeded");
    assert.equal(res.body.error.param, "messages");
    assert.match(res.body.error.message, /the prompt has 16385 tokens.*nx3\.5-2b takes prompts of up to 16,384 tokens/);
  });

  test("max_tokens above the cap is refused as on the chat route; the cap itself is accepted", async () => {
    const over = await post(chatUrl, {model: M, messages: ask("Hi"), max_tokens: 65_537});
    assert.equal(over.status, 400);
    assert.equal(over.body.error.param, "max_tokens");
    assert.match(over.body.error.message, /65537 is above this server's max_tokens_cap \(65536\)/);
    const atCap = await post(chatUrl, {model: M, messages: ask("Say one word."), max_tokens: 65_536, stop: [" ", "\n", ".", "!"], temperature: 0});
    assert.equal(atCap.status, 200, atCap.text);
  });
});
