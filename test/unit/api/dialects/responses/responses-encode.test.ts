// GenerationEvents → Responses bodies and streams: the exact event order, append-only indices and
// matching item ids (fed through the openai SDK's own accumulator), the same items streamed or not,
// incomplete replies, and the error frames.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {accumulateResponse} from "openai/lib/responses/ResponseAccumulator";
import type {Response, ResponseStreamEvent} from "openai/resources/responses/responses";
import {decodeResponses} from "../../../../../src/api/dialects/responses/decode.ts";
import {responsesBody, responsesStreamEncoder} from "../../../../../src/api/dialects/responses/encode.ts";
import {responseShell, responsesUsage, type WireResponse} from "../../../../../src/api/dialects/responses/response-object.ts";
import {ApiError} from "../../../../../src/core/errors.ts";
import type {GenerationEvent, Timings} from "../../../../../src/core/generation.ts";
import {SchemaCache} from "../../../../../src/grammar/index.ts";
import {newCounters} from "../../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../../src/observability/log.ts";

const timings: Timings = {prompt_n: 5, prompt_ms: 1, prompt_per_second: 5000, predicted_n: 9, predicted_ms: 2, predicted_per_second: 4500, cache_n: 3, draft_n: 0, draft_n_accepted: 0};
const usage = {promptTokens: 8, completionTokens: 9, cachedTokens: 3, reasoningTokens: 4};
const done = (finishReason: "stop" | "length" | "tool_calls" = "stop"): GenerationEvent =>
  ({type: "done", finishReason, stoppedBy: null, usage, timings, logprobs: null});

const ctx = {requestId: "resp_t", maxTokensCap: 100, strictTools: true, logger: createMemoryLogger(), counters: newCounters()};
function shellFor(body: object): WireResponse {
  return responseShell({id: "resp_t", createdAt: 1700000000, model: "svc-test"}, decodeResponses({input: "x", ...body}, ctx));
}

const THINK_TEXT_CALL: GenerationEvent[] = [
  {type: "reasoning", text: "think"}, {type: "reasoning", text: "ing"},
  {type: "text", text: ""}, {type: "text", text: "Hel"}, {type: "text", text: "lo"},
  {type: "tool_call_start", index: 0, id: "call_a", name: "get_weather"},
  {type: "tool_call_args", index: 0, text: '{"city":'}, {type: "tool_call_args", index: 0, text: '"Paris"}'},
  done("tool_calls"),
];

type Ev = ResponseStreamEvent & {[k: string]: unknown};
function stream(shell: WireResponse, events: GenerationEvent[], summary: boolean, namespaces = new Map<string, string>()): Ev[] {
  const enc = responsesStreamEncoder(shell, {summary, namespaces});
  return events.flatMap((ev) => enc.frames(ev)).map((f) => {
    assert.equal(f.event, (f.data as Ev).type, "the event line names the event");
    return f.data as Ev;
  });
}

/** Runs the SDK's accumulator over the events; it throws on any index, id or part-type mismatch. */
function accumulate(events: Ev[]): Response {
  let snapshot: Response | undefined;
  for (const e of events) snapshot = accumulateResponse(structuredClone(e), snapshot);
  return snapshot!;
}

const stripIds = (output: unknown) => JSON.parse(JSON.stringify(output, (k, v) => (k === "id" || k === "item_id" ? "<id>" : v)));

describe("responsesStreamEncoder", () => {
  test("reasoning with summary, a message, a call: the exact event order, numbered from 0", () => {
    const events = stream(shellFor({reasoning: {summary: "auto"}}), THINK_TEXT_CALL, true);
    assert.deepEqual(events.map((e) => e.type), [
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_summary_part.added",
      "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta", "response.reasoning_summary_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      "response.completed",
    ]);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    const added = events.filter((e) => e.type === "response.output_item.added") as Extract<Ev, {type: "response.output_item.added"}>[];
    assert.deepEqual(added.map((e) => [e.output_index, e.item.type, e.item.id!.split("_")[0]]), [[0, "reasoning", "rs"], [1, "message", "msg"], [2, "function_call", "fc"]]);
    for (const e of events) if (typeof e.item_id === "string") assert.equal(e.item_id, added[e.output_index as number]!.item.id);
    const argsDone = events.find((e) => e.type === "response.function_call_arguments.done")!;
    assert.equal(argsDone.arguments, '{"city":"Paris"}');
    assert.equal(argsDone.name, "get_weather");

    const last = events.at(-1) as unknown as {response: WireResponse};
    assert.equal(last.response.status, "completed");
    assert.deepEqual(last.response.usage, responsesUsage(usage));
    assert.deepEqual(last.response.timings, timings);
    const [rs, msg, fc] = last.response.output as any[];
    assert.deepEqual(rs.content, [{type: "reasoning_text", text: "thinking"}]);
    assert.deepEqual(rs.summary, [{type: "summary_text", text: "thinking"}]);
    assert.equal(rs.status, "completed");
    assert.deepEqual(msg.content, [{type: "output_text", text: "Hello", annotations: [], logprobs: []}]);
    assert.deepEqual({...fc, id: undefined}, {id: undefined, type: "function_call", status: "completed", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}'});

    const acc = accumulate(events);
    assert.deepEqual(acc.output, last.response.output, "the SDK's accumulator ends with the same items");
  });

  test("lifecycle events carry the shell; the added items are snapshots, not later states", () => {
    const events = stream(shellFor({instructions: "be brief", temperature: 0.5}), [{type: "text", text: "a"}, {type: "text", text: "b"}, done()], false);
    const created = events[0] as unknown as {response: WireResponse};
    assert.equal(created.response.status, "in_progress");
    assert.deepEqual(created.response.output, []);
    assert.equal(created.response.usage, null);
    assert.equal(created.response.instructions, "be brief");
    assert.equal(created.response.temperature, 0.5);
    const added = events.find((e) => e.type === "response.output_item.added") as any;
    assert.deepEqual(added.item.content, []);
    assert.equal(added.item.status, "in_progress");
  });

  test("without summary: no summary events, summary stays []", () => {
    const events = stream(shellFor({}), THINK_TEXT_CALL, false);
    assert.ok(!events.some((e) => e.type.includes("summary")));
    assert.deepEqual((accumulate(events).output[0] as any).summary, []);
  });

  test("a reply cut by the budget: response.incomplete, its last item incomplete", () => {
    const events = stream(shellFor({max_output_tokens: 2}), [{type: "text", text: "Once"}, done("length")], false);
    const last = events.at(-1) as unknown as {type: string; response: WireResponse};
    assert.equal(last.type, "response.incomplete");
    assert.equal(last.response.status, "incomplete");
    assert.deepEqual(last.response.incomplete_details, {reason: "max_output_tokens"});
    assert.equal(last.response.max_output_tokens, 2);
    assert.equal((last.response.output[0] as any).status, "incomplete");
    accumulate(events);
  });

  test("a call of a namespaced tool names its namespace", () => {
    const events = stream(shellFor({}), [{type: "tool_call_start", index: 0, id: "call_n", name: "lookup"}, {type: "tool_call_args", index: 0, text: "{}"}, done("tool_calls")],
      false, new Map([["lookup", "mcp__docs"]]));
    assert.equal((events.at(-1) as any).response.output[0].namespace, "mcp__docs");
  });

  test("an empty reply: created, in_progress, completed with no items", () => {
    const events = stream(shellFor({}), [done()], false);
    assert.deepEqual(events.map((e) => e.type), ["response.created", "response.in_progress", "response.completed"]);
    assert.deepEqual(accumulate(events).output, []);
  });
});

describe("error frames", () => {
  const err = new ApiError("server_error", "the engine failed", {param: null});

  test("mid-stream: an error event (flat and nested) then response.failed with the items so far", () => {
    const enc = responsesStreamEncoder(shellFor({}), {summary: false, namespaces: new Map()});
    const sent = [{type: "text", text: "partial"}].flatMap((ev) => enc.frames(ev as GenerationEvent));
    const frames = enc.errorFrames!(err) as {event: string; data: any}[];
    assert.deepEqual(frames.map((f) => f.event), ["error", "response.failed"]);
    const [error, failed] = frames.map((f) => f.data);
    assert.deepEqual(error, {type: "error", code: "server_error", message: "the engine failed", param: null,
      error: {type: "server_error", code: "server_error", message: "the engine failed", param: null}, sequence_number: sent.length});
    assert.equal(failed.sequence_number, sent.length + 1);
    assert.equal(failed.response.status, "failed");
    assert.deepEqual(failed.response.error, {code: "server_error", message: "the engine failed"});
    assert.equal(failed.response.output[0].content[0].text, "partial");
  });

  test("before any event: the stream still opens with response.created; a 400-kind error keeps its type", () => {
    const enc = responsesStreamEncoder(shellFor({}), {summary: false, namespaces: new Map()});
    const frames = enc.errorFrames!(new ApiError("context_length", "too long", {param: "input"})) as {event: string; data: any}[];
    assert.deepEqual(frames.map((f) => f.event), ["response.created", "response.in_progress", "error", "response.failed"]);
    assert.deepEqual(frames.map((f) => f.data.sequence_number), [0, 1, 2, 3]);
    assert.equal(frames[2]!.data.code, "context_length_exceeded");
    assert.equal(frames[2]!.data.param, "input");
    assert.equal(frames[3]!.data.response.error.code, "context_length_exceeded");
  });

});

describe("responsesBody", () => {
  test("the same items as the stream, usage, timings, completed_at", () => {
    const shell = shellFor({reasoning: {summary: "auto"}});
    const body = responsesBody(shell, THINK_TEXT_CALL, {summary: true, namespaces: new Map()});
    const streamed = (stream(shell, THINK_TEXT_CALL, true).at(-1) as unknown as {response: WireResponse}).response;
    assert.deepEqual(stripIds(body.output), stripIds(streamed.output));
    assert.equal(body.status, "completed");
    assert.equal(typeof body.completed_at, "number");
    assert.deepEqual(body.usage, {input_tokens: 8, input_tokens_details: {cached_tokens: 3}, output_tokens: 9, output_tokens_details: {reasoning_tokens: 4}, total_tokens: 17});
    assert.deepEqual(body.timings, timings);
    assert.equal(body.id, "resp_t");
    assert.equal(body.model, "svc-test");
    assert.equal(body.object, "response");
  });

  test("echoes and the fields the Open Responses schema requires", () => {
    const body = responsesBody(shellFor({previous_response_id: undefined, metadata: {k: "v"}, prompt_cache_key: "pk", text: {verbosity: "low"}}), [done()],
      {summary: false, namespaces: new Map()});
    for (const key of ["completed_at", "previous_response_id", "truncation", "text", "presence_penalty", "frequency_penalty", "top_logprobs", "reasoning", "user",
      "max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "safety_identifier", "prompt_cache_key", "error", "incomplete_details",
      "instructions", "metadata", "parallel_tool_calls", "temperature", "top_p", "tool_choice", "tools"]) {
      assert.ok(Object.hasOwn(body, key), key);
    }
    assert.deepEqual(body.metadata, {k: "v"});
    assert.equal(body.prompt_cache_key, "pk");
    assert.deepEqual(body.text, {format: {type: "text"}, verbosity: "low"});
    assert.equal(body.store, false);
    assert.equal(body.tool_choice, "auto");
    const tools = responsesBody(shellFor({tools: [{type: "function", name: "a"}, {type: "function", name: "b", strict: false}, {type: "web_search"}]}), [done()],
      {summary: false, namespaces: new Map()}).tools;
    assert.deepEqual(tools, [{type: "function", name: "a", strict: true}, {type: "function", name: "b", strict: false}, {type: "web_search"}], "strict echoed as applied");
  });

  test("no done event is an error", () => {
    assert.throws(() => responsesBody(shellFor({}), [{type: "text", text: "x"}], {summary: false, namespaces: new Map()}), /without a done event/);
  });
});
