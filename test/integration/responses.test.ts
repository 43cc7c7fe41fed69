// The Responses-style route in-process over the engine double, through the official openai client (on a
// real listener): the SDK's strict stream accumulator, the raw event stream and the budget's "incomplete",
// and the refusals, each a 400 (or 404) naming its field. Moved from e2e/responses.test.ts: replies, the
// cache, structured output, tool round trips, sessions and reasoning stay there, on real and scripted models.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import type {ResponseCreateParamsNonStreaming, ResponseInputItem, ResponseStreamEvent} from "openai/resources/responses/responses";
import {readSse, TIMING_FIELDS} from "../../support/server.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import type {Script} from "../doubles/engine-double.ts";

type WithTimings = {timings: Record<string, number>};

/** A long story goes on until the budget ends it; anything else gets a short answer (with a character split across tokens). */
const script: Script = (prompt) =>
  /long story/.test(prompt.text) ? {steps: [{text: "Once upon a time, a dragon slept. "}], end: "repeat"} : "Red, green and blue — done."; // 29 tokens: completes within the 30-token budget

describe("responses on the engine double", () => {
  let server: InProcessApp;
  let url: string;
  let client: OpenAI;
  before(async () => {
    server = await startInProcessApp({env: {SVC_PARALLEL: "2", SVC_FORK: "1"}, script});
    url = await server.listen();
    client = new OpenAI({baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0});
  });
  after(async () => {
    await server?.close();
  });

  const ask = (input: ResponseCreateParamsNonStreaming["input"], extra: Partial<ResponseCreateParamsNonStreaming> = {}): ResponseCreateParamsNonStreaming =>
    ({model: "m", input, max_output_tokens: 24, temperature: 0, ...extra});

  test("stream: the SDK's accumulator takes it, events in order, same text as create", async () => {
    const params = ask("Name three colors.", {max_output_tokens: 30});
    const plain = await client.responses.create(params);
    const stream = client.responses.stream({...params, stream: true});
    const events: ResponseStreamEvent[] = [];
    stream.on("event", (e) => events.push(e));
    const final = await stream.finalResponse();
    assert.equal(final.output_text, plain.output_text);
    assert.equal(final.status, plain.status);
    assert.equal(final.usage!.output_tokens, plain.usage!.output_tokens);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    assert.deepEqual(events.slice(0, 4).map((e) => e.type), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    assert.equal(events.at(-1)!.type, plain.status === "completed" ? "response.completed" : "response.incomplete");
    const deltas = events.filter((e) => e.type === "response.output_text.delta");
    assert.ok(deltas.length > 1);
    assert.equal(deltas.map((e) => (e as {delta: string}).delta).join(""), plain.output_text);
    assert.deepEqual(Object.keys((final as unknown as WithTimings).timings).sort(), [...TIMING_FIELDS].sort());
  });

  test("raw stream: an event line names every event, no [DONE], and a short budget ends incomplete", async () => {
    const res = await fetch(`${url}/v1/responses`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({input: "Write a long story about a dragon.", max_output_tokens: 5, temperature: 0, stream: true})});
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const {raw, data} = await readSse(res);
    assert.ok(!raw.includes("[DONE]"));
    const names = [...raw.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names, data.map((d) => d.type));
    const last = data.at(-1);
    assert.equal(last.type, "response.incomplete");
    assert.equal(last.response.status, "incomplete");
    assert.deepEqual(last.response.incomplete_details, {reason: "max_output_tokens"});
    assert.equal(last.response.usage.output_tokens, 5);
    const plain = await client.responses.create(ask("Write a long story about a dragon.", {max_output_tokens: 5}));
    assert.equal(plain.status, "incomplete");
    assert.deepEqual(plain.incomplete_details, {reason: "max_output_tokens"});
  });

  describe("refusals: 400 naming the field", () => {
    const refused = async (body: object, param: string, re: RegExp) => {
      const r = await server.post("/v1/responses", {max_output_tokens: 8, ...body});
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.type, "invalid_request_error");
      assert.equal(r.body.error.param, param);
      assert.match(r.body.error.message, re);
    };
    const history = [{role: "user", content: "weather?"}, {type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}"}];

    test("an unknown item type, and an item_reference", async () => {
      await refused({input: [{role: "user", content: "hi"}, {type: "computer_call_output", call_id: "x"}]}, "input[1].type", /"computer_call_output" is not an input item type/);
      await refused({input: [{type: "item_reference", id: "msg_1"}]}, "input[0].type", /no response store/);
    });

    test("a function_call_output with no earlier function_call", async () => {
      await refused({input: [...history, {type: "function_call_output", call_id: "call_2", output: "x"}]}, "input[2].call_id", /"call_2" matches no function_call/);
    });

    test("previous_response_id with no history", async () => {
      await refused({input: "And then?", previous_response_id: "resp_1"}, "previous_response_id", /no response store.*send the whole conversation/);
    });

    test("images need a vision tower, in a message and in a function_call_output", async () => {
      await refused({input: [{role: "user", content: [{type: "input_text", text: "what is this?"}, {type: "input_image", image_url: "data:image/png;base64,AA=="}]}]},
        "input[0].content[1]", /an image was sent but this server has no vision tower loaded/);
      await refused({input: [...history, {type: "function_call_output", call_id: "call_1", output: [{type: "input_image", image_url: "data:,"}]}]},
        "input[2].output[0]", /no vision tower/);
    });

    test("a budget above the cap, and the SDK's error class", async () => {
      await refused({input: "hi", max_output_tokens: 10_000_000}, "max_output_tokens", /above this server's max_tokens_cap/);
      await assert.rejects(client.responses.create(ask([{type: "item_reference", id: "x"}] as unknown as ResponseInputItem[])),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.status === 400);
    });

    test("stored-response routes answer 404: there is no store", async () => {
      const r = await server.get("/v1/responses/resp_123");
      assert.equal(r.status, 404);
      assert.equal(r.body.error.type, "not_found_error");
      assert.match(r.body.error.message, /no response store/);
      await assert.rejects(client.responses.retrieve("resp_123"), (err: unknown) => err instanceof OpenAI.NotFoundError);
      await assert.rejects(client.responses.delete("resp_123"), (err: unknown) => err instanceof OpenAI.NotFoundError);
      await assert.rejects(client.responses.cancel("resp_123"), (err: unknown) => err instanceof OpenAI.NotFoundError);
      await assert.rejects(client.responses.inputItems.list("resp_123"), (err: unknown) => err instanceof OpenAI.NotFoundError);
    });
  });
});
