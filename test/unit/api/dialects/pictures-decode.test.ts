// Pictures as the three dialects read them when the model has a vision tower (DecodeContext.vision): each becomes a
// marker in the message text at its place and an entry in `media` naming its field; sources that would need a fetch
// or a store are refused by field; strict tools on a request with a picture are served unenforced.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {decodeChat} from "../../../../src/api/dialects/chat/decode.ts";
import {decodeMessages, LogOnce} from "../../../../src/api/dialects/messages/decode.ts";
import {decodeResponses} from "../../../../src/api/dialects/responses/decode.ts";
import {mediaMarker} from "../../../../src/core/media.ts";
import {newCounters} from "../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";
import {apiErrorOf} from "../../../fixtures/api-error.ts";

const ctx = () => ({requestId: "r", maxTokensCap: 100, strictTools: true, logger: createMemoryLogger(), counters: newCounters(), vision: true});
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64");
const url = `data:image/png;base64,${PNG}`;

function contentOf(request: {prompt: {kind: string}}, i: number): string {
  const p = request.prompt as {kind: "chat"; messages: {content: string}[]};
  return p.messages[i]!.content;
}

describe("chat", () => {
  test("image_url parts (object or string form) become markers in place, in order", () => {
    const {request} = decodeChat({messages: [{role: "user", content: [{type: "text", text: "a "}, {type: "image_url", image_url: {url}},
      {type: "text", text: " b "}, {type: "image_url", image_url: PNG}]}]}, ctx());
    assert.equal(contentOf(request, 0), `a ${mediaMarker(0)} b ${mediaMarker(1)}`);
    assert.deepEqual(request.media!.map((m) => m.field), ["messages[0].content[1].image_url.url", "messages[0].content[3].image_url"]);
    assert.deepEqual([...request.media![0]!.bytes], [0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
  });

  test("a URL to fetch and a missing url are refused by field", () => {
    const err = apiErrorOf(() => decodeChat({messages: [{role: "user", content: [{type: "image_url", image_url: {url: "http://x/y.png"}}]}]}, ctx()));
    assert.equal(err.param, "messages[0].content[0].image_url.url");
    assert.match(err.message, /no URL is ever fetched/);
    assert.equal(apiErrorOf(() => decodeChat({messages: [{role: "user", content: [{type: "image_url", image_url: {}}]}]}, ctx())).param,
      "messages[0].content[0].image_url.url");
  });

  test("a strict tool on a request with a picture is unenforced, with the reason; without a picture it is enforced", () => {
    const tools = [{type: "function", function: {name: "f", strict: true, parameters: {type: "object", properties: {}, additionalProperties: false}}}];
    const withPicture = decodeChat({messages: [{role: "user", content: [{type: "image_url", image_url: {url}}]}], tools}, ctx()).request;
    assert.equal(withPicture.tools!.tools[0]!.enforced, false);
    const without = decodeChat({messages: [{role: "user", content: "hi"}], tools}, ctx()).request;
    assert.equal(without.tools!.tools[0]!.enforced, true);
    assert.equal(without.media, undefined);
  });
});

describe("Messages", () => {
  const mctx = () => {
    const logger = createMemoryLogger();
    return {...ctx(), logger, headers: {}, notes: new LogOnce(logger)};
  };
  const body = (content: unknown[]) => ({model: "m", max_tokens: 5, messages: [{role: "user", content}]});

  test("base64 image blocks, also inside a tool_result, become markers", () => {
    const {request} = decodeMessages(body([{type: "image", source: {type: "base64", media_type: "image/png", data: PNG}}, {type: "text", text: "what?"}]),
      mctx(), "create");
    assert.equal(contentOf(request, 0), `${mediaMarker(0)}\n\nwhat?`);
    assert.equal(request.media![0]!.field, "messages[0].content[0].source.data");
    const withTool = decodeMessages({model: "m", max_tokens: 5, messages: [{role: "user", content: "go"},
      {role: "assistant", content: [{type: "tool_use", id: "t1", name: "shot", input: {}}]},
      {role: "user", content: [{type: "tool_result", tool_use_id: "t1", content: [{type: "image", source: {type: "base64", media_type: "image/png", data: PNG}}]}]}]},
    mctx(), "create").request;
    assert.equal(withTool.media![0]!.field, "messages[2].content[0].content[0].source.data");
  });

  test("url and file sources are refused: nothing is fetched", () => {
    const err = apiErrorOf(() => decodeMessages(body([{type: "image", source: {type: "url", url: "https://x/y.png"}}]), mctx(), "create"));
    assert.equal(err.param, "messages[0].content[0].source.type");
    assert.match(err.message, /no URL or file is ever fetched/);
  });
});

describe("Responses", () => {
  test("input_image in a message and in a function_call_output", () => {
    const {request} = decodeResponses({input: [{role: "user", content: [{type: "input_image", image_url: url}, {type: "input_text", text: "hi"}]},
      {type: "function_call", call_id: "c", name: "shot", arguments: "{}"},
      {type: "function_call_output", call_id: "c", output: [{type: "input_image", image_url: url}]}]}, ctx());
    assert.equal(contentOf(request, 0), `${mediaMarker(0)}hi`);
    assert.deepEqual(request.media!.map((m) => m.field), ["input[0].content[0].image_url", "input[2].output[0].image_url"]);
  });

  test("a file_id is refused: there is no file store", () => {
    const err = apiErrorOf(() => decodeResponses({input: [{role: "user", content: [{type: "input_image", file_id: "file-1"}]}]}, ctx()));
    assert.equal(err.param, "input[0].content[0].file_id");
  });
});
