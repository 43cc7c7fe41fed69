// Chat completions in-process over the engine double: the budget rule and the raw SSE framing (moved from
// e2e/chat.test.ts; what the real model says, its cache and its determinism are tested there).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {readSse} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import type {Script} from "../doubles/engine-double.ts";

let server: InProcessApp;
let url: string;
let client: OpenAI;

/** A long story goes on until the budget ends it; anything else gets a short answer (with a multibyte character). */
const script: Script = (prompt) =>
  /long story/.test(prompt.text) ? {steps: [{text: "Once upon a time, a dragon slept. "}], end: "repeat"} : "Hi — nice to meet you.";

before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "4"}, script});
  url = await server.listen();
  client = new OpenAI({baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0});
});
after(async () => {
  await server?.close();
});

const ask = (content: string) => [{role: "user" as const, content}];

describe("chat completions", () => {
  test("the budget ends a reply with finish_reason length", async () => {
    const res = await client.chat.completions.create({model: "m", messages: ask("Write a long story about a dragon."), max_completion_tokens: 5, temperature: 0});
    assert.equal(res.choices[0]!.finish_reason, "length");
    assert.equal(res.usage!.completion_tokens, 5);
  });

  test("without include_usage no chunk carries usage, and the stream ends with [DONE]", async () => {
    const res = await fetch(`${url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({messages: ask("Hi"), max_tokens: 4, temperature: 0, stream: true})});
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const {data} = await readSse(res);
    assert.equal(data.at(-1), "[DONE]");
    const chunks = data.slice(0, -1);
    assert.ok(chunks.every((c) => !("usage" in c)));
    assert.deepEqual(chunks[0].choices[0].delta, {role: "assistant", content: "", refusal: null});
    const finish = chunks.at(-1);
    assert.ok(["stop", "length"].includes(finish.choices[0].finish_reason));
    assert.ok(finish.timings && typeof finish.timings.predicted_n === "number");
  });
});
