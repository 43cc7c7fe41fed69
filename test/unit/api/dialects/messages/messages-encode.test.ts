// GenerationEvents → Anthropic bodies and streams, judged by the official SDK itself: a local HTTP server
// plays encoder frames through the server's SseStream, and `messages.stream(...).finalMessage()` must
// rebuild the non-streamed body; a mid-stream error must reach the SDK as its APIError. Plus signatures,
// stop reasons, usage and the error shape.

import assert from "node:assert/strict";
import {createServer, type Server, type ServerResponse} from "node:http";
import type {AddressInfo} from "node:net";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import {ApiError, invalidField, type ErrorKind} from "../../../../../src/core/errors.ts";
import type {GenerationEvent, Timings} from "../../../../../src/core/generation.ts";
import {SseStream} from "../../../../../src/api/sse.ts";
import {messageBody, messageStreamEncoder, messageStreamEvents, stopOf, type MessageIdentity} from "../../../../../src/api/dialects/messages/encode.ts";
import {anthropicErrorBody} from "../../../../../src/api/dialects/messages/errors.ts";
import {reasoningFromSignature, signReasoning} from "../../../../../src/api/dialects/messages/signature.ts";

const timings: Timings = {prompt_n: 10, prompt_ms: 1, prompt_per_second: 1, predicted_n: 9, predicted_ms: 1, predicted_per_second: 1, cache_n: 4, draft_n: 0, draft_n_accepted: 0};
const done = (finishReason: "stop" | "length" | "tool_calls" = "tool_calls", stoppedBy: string | null = null): GenerationEvent =>
  ({type: "done", finishReason, stoppedBy, usage: {promptTokens: 10, completionTokens: 9, cachedTokens: 4, reasoningTokens: 3}, timings, logprobs: null});
const EVENTS: GenerationEvent[] = [
  {type: "reasoning", text: "Think "}, {type: "reasoning", text: "hard."},
  {type: "text", text: "Calling."},
  {type: "tool_call_start", index: 0, id: "call_abc", name: "get_weather"}, {type: "tool_call_args", index: 0, text: "{\"city\": "}, {type: "tool_call_args", index: 0, text: "\"Oslo\"}"},
  {type: "tool_call_start", index: 1, id: "call_def", name: "get_time"},
  done(),
];
const who = (display: "summarized" | "omitted" = "summarized"): MessageIdentity => ({id: "msg_1", model: "svc-model", stopSequences: ["END"], thinkingDisplay: display});

let server: Server;
let client: Anthropic;
let play: (res: ServerResponse) => void = () => undefined;
before(async () => {
  server = createServer((_req, res) => play(res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  client = new Anthropic({baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "x", maxRetries: 0});
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Serves the events as serveGeneration does, optionally failing after them. */
function serve(events: GenerationEvent[], display: "summarized" | "omitted" = "summarized", fail?: ApiError): void {
  play = (res) => {
    const sse = new SseStream(res, 60_000);
    const enc = messageStreamEncoder(who(display), {promptTokens: 10, cachedTokens: 0});
    for (const ev of events) for (const f of enc.frames(ev)) sse.send(f.data, f.event);
    if (fail) for (const f of enc.errorFrames!(fail)) sse.send(f.data, f.event);
    sse.end();
  };
}

const params = {model: "m", max_tokens: 50, messages: [{role: "user" as const, content: "Hi"}]};

describe("the stream as the SDK reads it", () => {
  test("finalMessage() rebuilds the non-streamed body: thinking, text, two tool_use blocks, usage", async () => {
    serve(EVENTS);
    const final = await client.messages.stream(params).finalMessage();
    const {timings: _t, ...body} = messageBody(who(), EVENTS);
    assert.deepEqual(JSON.parse(JSON.stringify(final)), JSON.parse(JSON.stringify({...body, parsed_output: null})));
    assert.deepEqual(body.content.map((b) => b.type), ["thinking", "text", "tool_use", "tool_use"]);
    assert.deepEqual(body.content[2], {type: "tool_use", id: "toolu_abc", name: "get_weather", input: {city: "Oslo"}, caller: {type: "direct"}});
    assert.deepEqual((body.content[3] as {input: unknown}).input, {});
    assert.equal(reasoningFromSignature((body.content[0] as {signature: string}).signature), "Think hard.");
    assert.equal(body.stop_reason, "tool_use");
    assert.deepEqual([body.usage.input_tokens, body.usage.cache_read_input_tokens, body.usage.output_tokens, body.usage.output_tokens_details?.thinking_tokens], [6, 4, 9, 3]);
  });

  test("display omitted: no thinking deltas, an empty text, the whole signature", async () => {
    serve(EVENTS, "omitted");
    const final = await client.messages.stream(params).finalMessage();
    assert.deepEqual(final.content[0], {type: "thinking", thinking: "", signature: signReasoning("Think hard.")});
  });

  test("a failure after some frames reaches the SDK as an APIError with Anthropic's error type", async () => {
    serve(EVENTS.slice(0, 3), "summarized", new ApiError("engine_busy", "the engine is busy"));
    const err = await client.messages.stream(params).finalMessage().catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal((err.error as {error: {type: string}}).error.type, "overloaded_error");
    assert.match(err.message, /the engine is busy/);
  });
});

describe("event order", () => {
  test("message_start once, blocks 0..n-1, a ping after the first start, signature_delta right before the thinking block stops", () => {
    const enc = messageStreamEvents(who(), {promptTokens: 10, cachedTokens: 0});
    const out = EVENTS.flatMap((ev) => enc.push(ev));
    const names = out.map((e) => e.type === "content_block_delta" ? e.delta.type : e.type);
    assert.deepEqual(names, ["message_start", "content_block_start", "ping", "thinking_delta", "thinking_delta", "signature_delta", "content_block_stop",
      "content_block_start", "text_delta", "content_block_stop", "content_block_start", "input_json_delta", "input_json_delta", "content_block_stop",
      "content_block_start", "content_block_stop", "message_delta", "message_stop"]);
    const starts = out.filter((e) => e.type === "content_block_start");
    assert.deepEqual(starts.map((e) => e.index), [0, 1, 2, 3]);
    assert.deepEqual(starts[2]!.content_block, {type: "tool_use", id: "toolu_abc", name: "get_weather", input: {}, caller: {type: "direct"}});
    const start = out[0]!;
    assert.ok(start.type === "message_start");
    assert.equal(start.message.usage.input_tokens, 10);
    const delta = out.at(-2)!;
    assert.ok(delta.type === "message_delta");
    assert.deepEqual([delta.usage.output_tokens, delta.usage.input_tokens, delta.usage.cache_read_input_tokens], [9, 6, 4]);
    assert.deepEqual((delta as {timings?: Timings}).timings, timings);
  });

  test("an empty reply: message_start, message_delta, message_stop and no blocks", () => {
    const enc = messageStreamEvents(who(), {promptTokens: 3, cachedTokens: 0});
    assert.deepEqual(enc.push(done("stop")).map((e) => e.type), ["message_start", "message_delta", "message_stop"]);
  });
});

describe("stop reasons, signatures, errors", () => {
  test("stop_reason from finish and the stop string", () => {
    const d = (f: "stop" | "length" | "tool_calls", by: string | null = null) => done(f, by) as Extract<GenerationEvent, {type: "done"}>;
    assert.deepEqual(stopOf(d("stop"), ["END"]), {stop_reason: "end_turn", stop_sequence: null});
    assert.deepEqual(stopOf(d("stop", "END"), ["END"]), {stop_reason: "stop_sequence", stop_sequence: "END"});
    assert.deepEqual(stopOf(d("stop", "</s>"), ["END"]), {stop_reason: "end_turn", stop_sequence: null});
    assert.deepEqual(stopOf(d("length"), []), {stop_reason: "max_tokens", stop_sequence: null});
    assert.deepEqual(stopOf(d("tool_calls"), []), {stop_reason: "tool_use", stop_sequence: null});
  });

  test("a signature carries its reasoning exactly; anything altered or foreign is refused", () => {
    for (const r of ["", "plain", "ünïcode ✓ and 🙂\nlines", "x".repeat(5000)]) assert.equal(reasoningFromSignature(signReasoning(r)), r);
    const s = signReasoning("secret plan");
    assert.match(s, /^svc1\.[A-Za-z0-9_-]*\.[0-9a-f]{16}$/);
    const [prefix, data, hash] = s.split(".") as [string, string, string];
    assert.equal(reasoningFromSignature(`${prefix}.${Buffer.from("other plan").toString("base64url")}.${hash}`), null, "hash mismatch");
    assert.equal(reasoningFromSignature(`svc2.${data}.${hash}`), null);
    assert.equal(reasoningFromSignature(`${prefix}.${data}=.${hash}`), null, "padding is not base64url");
    assert.equal(reasoningFromSignature(`${prefix}.${data}.${hash.toUpperCase()}`), null);
    assert.equal(reasoningFromSignature("EqQBCkYIARgCKkDxyz"), null, "Anthropic's own signatures are not ours");
    const invalidUtf8 = Buffer.from([0xff, 0xfe]).toString("base64url");
    assert.equal(reasoningFromSignature(`svc1.${invalidUtf8}.0000000000000000`), null);
  });

  test("each error kind has Anthropic's type; the field goes into the message once", () => {
    const types: Record<ErrorKind, string> = {invalid_request: "invalid_request_error", context_length: "invalid_request_error", unauthorized: "authentication_error",
      not_found: "not_found_error", payload_too_large: "request_too_large", unsupported_media: "invalid_request_error", unprocessable: "invalid_request_error", client_closed: "api_error",
      server_error: "api_error", engine_busy: "overloaded_error", insufficient_memory: "overloaded_error", model_restarting: "overloaded_error", shutting_down: "overloaded_error",
      engine_unavailable: "api_error"};
    for (const [kind, type] of Object.entries(types)) {
      assert.deepEqual(anthropicErrorBody(new ApiError(kind as ErrorKind, "why"), "msg_1"), {type: "error", error: {type, message: "why"}, request_id: "msg_1"});
    }
    assert.equal(anthropicErrorBody(invalidField("messages[0].content", "must be text"), "msg_1").error.message, "messages[0].content: must be text");
    assert.equal(anthropicErrorBody(new ApiError("invalid_request", "prompt too long", {param: "messages"}), "msg_1").error.message, "messages: prompt too long");
  });

  test("an overflow is worded as Anthropic words it (what Claude Code matches), never prefixed with the field", () => {
    const err = new ApiError("context_length", "the prompt has 9000 tokens but ...", {param: "messages", overflow: {promptTokens: 9000, maxPromptTokens: 8191}});
    assert.deepEqual(anthropicErrorBody(err, "msg_2"),
      {type: "error", error: {type: "invalid_request_error", message: "prompt is too long: 9000 tokens > 8191 maximum"}, request_id: "msg_2"});
  });
});
