// The playground's browser modules (src/api/playground/static), run in Node: the bodies the page builds are
// accepted by each route's own decoder, and the page's stream reducers read what each route's own encoder
// writes (reasoning, text, a tool call, timings), so the page cannot drift from the wire. Plus the JSON
// highlighter and the reply checker under a schema.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {decodeChat} from "../../../../src/api/dialects/chat/decode.ts";
import {chatStreamEncoder} from "../../../../src/api/dialects/chat/encode.ts";
import {decodeMessages, LogOnce} from "../../../../src/api/dialects/messages/decode.ts";
import {messageStreamEncoder} from "../../../../src/api/dialects/messages/encode.ts";
import {decodeResponses} from "../../../../src/api/dialects/responses/decode.ts";
import {responsesStreamEncoder} from "../../../../src/api/dialects/responses/encode.ts";
import {responseShell} from "../../../../src/api/dialects/responses/response-object.ts";
import type {StreamEncoder} from "../../../../src/api/serve-generation.ts";
import type {GenerationEvent, Timings} from "../../../../src/core/generation.ts";
import {SchemaCache} from "../../../../src/grammar/index.ts";
import {newCounters} from "../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";
import {COMMON_FIELDS, DEFAULT_SIZE, IMAGE_SIZES, readImageOptions, readPrompt, refuseUnknown} from "../../../../src/api/side/images/fields.ts";
import {applyEvent, buildRequest, cacheShare, emptyReply, imageRequest, imageResult, IMAGE_SIZES as PAGE_SIZES,
  type Route} from "../../../../src/api/playground/static/api.js";
import {checkReply, highlight, validate} from "../../../../src/api/playground/static/json.js";

const timings: Timings = {prompt_n: 6, prompt_ms: 1, prompt_per_second: 6000, predicted_n: 9, predicted_ms: 2, predicted_per_second: 4500, cache_n: 2, draft_n: 0, draft_n_accepted: 0};
const EVENTS: GenerationEvent[] = [
  {type: "reasoning", text: "think"}, {type: "reasoning", text: "ing <b>"},
  {type: "text", text: "Hel"}, {type: "text", text: "lo <script>"},
  {type: "tool_call_start", index: 0, id: "call_a", name: "get_weather"},
  {type: "tool_call_args", index: 0, text: '{"city":'}, {type: "tool_call_args", index: 0, text: '"Paris"}'},
  {type: "done", finishReason: "tool_calls", stoppedBy: null, usage: {promptTokens: 8, completionTokens: 9, cachedTokens: 2, reasoningTokens: 3}, timings, logprobs: null},
];

const SCHEMA = {type: "object", properties: {city: {type: "string", maxLength: 40}}, required: ["city"], additionalProperties: false};
const TOOLS = [{type: "function", function: {name: "get_weather", description: "Weather", parameters: {type: "object", properties: {city: {type: "string"}}, required: ["city"]}}}];
const SETTINGS = {system: "Be brief.", max_tokens: "32", temperature: "0.5", top_p: "0.9", top_k: "20", min_p: "0.05", seed: "7", effort: "low"};

function ctx() {
  const logger = createMemoryLogger();
  return {requestId: "req_1", signal: new AbortController().signal, maxTokensCap: 100, schemas: new SchemaCache(), grammarEnabled: true,
    strictTools: true, logger, counters: newCounters(), headers: {}, notes: new LogOnce(logger)};
}

function decode(route: Route, body: unknown) {
  if (route === "chat") return decodeChat(body, ctx());
  if (route === "responses") return decodeResponses(body, ctx());
  return decodeMessages(body, ctx(), "create");
}

function encoder(route: Route): StreamEncoder {
  if (route === "chat") return chatStreamEncoder({id: "chatcmpl-1", created: 1_700_000_000, model: "m"}, true);
  if (route === "responses") {
    const shell = responseShell({id: "resp_1", createdAt: 1_700_000_000, model: "m"}, decodeResponses({input: "x"}, ctx()));
    return responsesStreamEncoder(shell, {summary: false, namespaces: new Map()});
  }
  return messageStreamEncoder({id: "msg_1", model: "m", stopSequences: [], thinkingDisplay: "summarized"}, {promptTokens: 8, cachedTokens: 2});
}

const ROUTES: Route[] = ["chat", "responses", "messages"];

function decodeWithVision(route: Route, body: unknown) {
  const c = {...ctx(), vision: true};
  if (route === "chat") return decodeChat(body, c);
  if (route === "responses") return decodeResponses(body, c);
  return decodeMessages(body, c, "create");
}

describe("the page's requests", () => {
  for (const route of ROUTES) {
    test(`${route}: a body with every setting, a schema and tools is accepted by the route's decoder`, () => {
      const history = [{role: "user" as const, content: "Hi"}, {role: "assistant" as const, content: "Hello."}, {role: "user" as const, content: "Weather?"}];
      assert.doesNotThrow(() => decode(route, buildRequest(route, history, SETTINGS, SCHEMA, TOOLS)));
      assert.doesNotThrow(() => decode(route, buildRequest(route, history, {}, null, null)));
    });
  }
});

describe("the page's pictures", () => {
  const PNG = "data:image/png;base64,iVBORw0KGgo=";
  for (const route of ROUTES) {
    test(`${route}: a pasted or dropped picture goes as the route's picture part, which its decoder reads with a vision tower`, () => {
      const history = [{role: "user" as const, content: "What is this?", pictures: [PNG]}];
      const {request} = decodeWithVision(route, buildRequest(route, history, {}, null, null));
      assert.equal(request.media?.length, 1);
      assert.deepEqual([...request.media![0]!.bytes], [...Buffer.from("iVBORw0KGgo=", "base64")]);
      assert.match(JSON.stringify(request.prompt), /What is this\?/);
    });
  }
});

describe("the page's image requests", () => {
  const FORM = {prompt: " a red cat ", size: "256x256", n: "2", seed: "7"};
  const PICTURE = new File([new Uint8Array([0x89, 0x50])], "cat.png", {type: "image/png"});

  test("the size list is the route's", () => {
    assert.deepEqual(PAGE_SIZES, [...IMAGE_SIZES]);
  });

  test("without a picture: a JSON generation the route's field rules accept, values as typed", () => {
    const req = imageRequest(FORM, "nximg2-klein-4b", null);
    assert.equal(req.path, "/v1/images/generations");
    assert.deepEqual(req.body, {model: "nximg2-klein-4b", prompt: "a red cat", size: "256x256", n: 2, seed: 7, response_format: "b64_json"});
    const fields = req.body as Record<string, unknown>;
    assert.doesNotThrow(() => refuseUnknown(fields, COMMON_FIELDS));
    assert.equal(readPrompt(fields, true), "a red cat");
    assert.deepEqual(readImageOptions(fields, IMAGE_SIZES), {width: 256, height: 256, n: 2, responseFormat: "b64_json", seed: 7, quality: null,
      size: "256x256"});
    // An empty seed is left to the server; a negative one goes as typed, for the server to refuse by name.
    assert.equal("seed" in imageRequest({...FORM, seed: ""}, "m", null).body, false);
    assert.throws(() => readImageOptions(imageRequest({...FORM, seed: "-1"}, "m", null).body as Record<string, unknown>, IMAGE_SIZES), /seed: must be/);
  });

  test("with a picture: multipart to edits with the prompt, to variations without one", () => {
    const edit = imageRequest({...FORM, size: "auto"}, "m", PICTURE);
    assert.equal(edit.path, "/v1/images/edits");
    const form = edit.body as FormData;
    assert.equal((form.get("image") as File).name, "cat.png");
    const text = Object.fromEntries([...form.entries()].filter(([k]) => k !== "image")) as Record<string, string>;
    assert.deepEqual(text, {model: "m", prompt: "a red cat", size: "auto", n: "2", seed: "7", response_format: "b64_json"});
    assert.equal(readPrompt(text, true), "a red cat");
    assert.equal(readImageOptions(text, [DEFAULT_SIZE]).size, "512x512");
    const variation = imageRequest({...FORM, prompt: "  "}, "m", PICTURE);
    assert.equal(variation.path, "/v1/images/variations");
    assert.equal((variation.body as FormData).has("prompt"), false);
  });

  test("a response's pictures become data URLs with the seed", () => {
    assert.deepEqual(imageResult({data: [{b64_json: "AAA"}, {url: "data:image/png;base64,BBB"}], seed: 3, size: "256x256"}),
      {urls: ["data:image/png;base64,AAA", "data:image/png;base64,BBB"], seed: 3, size: "256x256"});
  });
});

describe("the page's stream reducers", () => {
  for (const route of ROUTES) {
    test(`${route}: reasoning, text, a tool call and timings from the route's own encoder`, () => {
      const enc = encoder(route);
      const reply = emptyReply();
      const frames = EVENTS.flatMap((ev) => enc.frames(ev));
      for (const f of frames) applyEvent(route, reply, {event: f.event ?? "message", data: JSON.parse(JSON.stringify(f.data))});
      if (enc.terminator) applyEvent(route, reply, {event: "message", data: enc.terminator});
      assert.equal(reply.reasoning, "thinking <b>");
      assert.equal(reply.text, "Hello <script>");
      assert.deepEqual(Object.values(reply.tools).map((t) => [t.name, t.args]), [["get_weather", '{"city":"Paris"}']]);
      assert.deepEqual(reply.timings, timings);
      assert.ok(reply.finish, "a finish reason");
      assert.equal(reply.error, null);
    });
  }

  test("an error frame becomes the reply's error", () => {
    const reply = emptyReply();
    applyEvent("chat", reply, {event: "message", data: {error: {message: "the engine stopped"}}});
    assert.equal(reply.error, "the engine stopped");
  });

  test("the cache share is cached of cached plus evaluated", () => {
    assert.equal(cacheShare(timings), 0.25);
    assert.equal(cacheShare({cache_n: 0, prompt_n: 0}), 0);
  });
});

describe("JSON in the page", () => {
  test("highlight covers the text exactly and tells keys from strings", () => {
    const text = '{\n  "a": "x",\n  "n": -1.5e3,\n  "b": [true, null]\n}';
    const runs = highlight(text);
    assert.equal(runs.map((r) => r.text).join(""), text);
    assert.deepEqual(runs.filter((r) => r.cls === "j-key").map((r) => r.text), ['"a"', '"n"', '"b"']);
    assert.deepEqual(runs.filter((r) => r.cls && r.cls !== "j-punct" && r.cls !== "j-key").map((r) => r.cls), ["j-str", "j-num", "j-bool", "j-null"]);
  });

  test("the checker names where a reply breaks the schema", () => {
    assert.deepEqual(validate(SCHEMA, {city: "Paris"}), []);
    assert.deepEqual(validate(SCHEMA, {city: 3, extra: 1}), ["$.city: expected string, got integer", "$.extra: not a declared property"]);
    assert.deepEqual(validate({type: "array", items: {$ref: "#/$defs/n"}, maxItems: 1, $defs: {n: {type: "integer", minimum: 0}}}, [1, -1]),
      ["$: more than 1 items", "$[1]: below 0"]);
    assert.deepEqual(validate({anyOf: [{type: "string"}, {type: "null"}]}, 1), ["$: matches none of anyOf"]);
    const r = checkReply(SCHEMA, '{"city":"Rome"}');
    assert.deepEqual(r, {ok: true, errors: [], pretty: '{\n  "city": "Rome"\n}'});
    assert.equal(checkReply(SCHEMA, "{oops").ok, false);
  });
});
