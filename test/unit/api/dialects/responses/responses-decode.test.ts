// Responses-style bodies → GenerationRequest: input items to template messages (instructions and
// system/developer turns folded, calls merged, reasoning dropped), tools (strict by default, namespaces
// unwrapped, hosted tools left out), tool_choice, text.format, reasoning, and every refusal by field.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {ApiError} from "../../../../../src/core/errors.ts";
import {decodeResponses} from "../../../../../src/api/dialects/responses/decode.ts";
import {SchemaCache} from "../../../../../src/grammar/index.ts";
import {compileResponseFormat} from "../../../../../src/pipeline/response-format.ts";
import {newCounters} from "../../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../../src/observability/log.ts";
import {apiErrorOf} from "../../../../fixtures/api-error.ts";

const logger = createMemoryLogger();
const ctx = {requestId: "resp_1", maxTokensCap: 100, strictTools: true, logger, counters: newCounters()};

const decode = (body: object) => decodeResponses(body, ctx);
function prompt(body: object) {
  const p = decode(body).request.prompt;
  if (p.kind !== "chat") throw new Error("expected a chat prompt");
  return p;
}
function refused(body: object, param: string, re?: RegExp): ApiError {
  const err = apiErrorOf(() => decode(body));
  assert.equal(err.status, 400);
  assert.equal(err.param, param, err.message);
  if (re) assert.match(err.message, re);
  return err;
}

const user = (content: unknown) => ({role: "user", content});
const call = (id: string, name = "f", args = "{}") => ({type: "function_call", call_id: id, name, arguments: args});
const output = (id: string, out: unknown) => ({type: "function_call_output", call_id: id, output: out});
const fn = (name: string, extra: object = {}) => ({type: "function", name, parameters: {type: "object", properties: {x: {type: "string"}}, required: ["x"]}, ...extra});

describe("decodeResponses: input items", () => {
  test("a string input is one user message; the generation prompt is added", () => {
    const p = prompt({input: "hi"});
    assert.deepEqual(p.messages, [{role: "user", content: "hi"}]);
    assert.equal(p.addGenerationPrompt, true);
    assert.equal(p.continueFinalMessage, false);
  });

  test("instructions and every system/developer turn fold, in order, into one system message at the start", () => {
    const p = prompt({instructions: "A", input: [user("u1"), {role: "developer", content: "B"}, {type: "message", role: "system", content: [{type: "input_text", text: "C"}]}, user("u2")]});
    assert.deepEqual(p.messages, [{role: "system", content: "A\n\nB\n\nC"}, {role: "user", content: "u1"}, {role: "user", content: "u2"}]);
  });

  test("calls merge onto the assistant message before them; outputs become tool messages; reasoning is dropped", () => {
    const p = prompt({input: [user("q"), {type: "reasoning", id: "rs_1", summary: []},
      {type: "message", role: "assistant", content: [{type: "output_text", text: "Looking.", annotations: []}]},
      call("c1", "a", '{"x":1}'), call("c2", "b"), output("c1", "one"), output("c2", [{type: "input_text", text: "t"}, {type: "input_text", text: "wo"}]),
      call("c3", "a"), output("c3", "three")]});
    assert.deepEqual(p.messages, [
      {role: "user", content: "q"},
      {role: "assistant", content: "Looking.", tool_calls: [
        {id: "c1", type: "function", function: {name: "a", arguments: '{"x":1}'}}, {id: "c2", type: "function", function: {name: "b", arguments: "{}"}}]},
      {role: "tool", content: "one", tool_call_id: "c1"},
      {role: "tool", content: "two", tool_call_id: "c2"},
      {role: "assistant", content: "", tool_calls: [{id: "c3", type: "function", function: {name: "a", arguments: "{}"}}]},
      {role: "tool", content: "three", tool_call_id: "c3"},
    ]);
    assert.equal(p.addGenerationPrompt, true);
  });

  test("an assistant refusal part is its text; a final assistant message is continued, not answered", () => {
    const p = prompt({input: [user("q"), {role: "assistant", content: [{type: "refusal", refusal: "No"}, {type: "output_text", text: ", but"}]}]});
    assert.deepEqual(p.messages.at(-1), {role: "assistant", content: "No, but"});
    assert.equal(p.continueFinalMessage, true);
    assert.equal(p.addGenerationPrompt, false);
  });

  test("refusals name the item's field", () => {
    refused({input: [user("q"), {type: "computer_call", id: "x"}]}, "input[1].type", /"computer_call" is not an input item type/);
    refused({input: [{type: "item_reference", id: "msg_1"}]}, "input[0].type", /no response store/);
    refused({input: [{content: "no role"}]}, "input[0].type", /is required/);
    refused({input: ["text"]}, "input[0]", /must be an object/);
    refused({input: [{role: "tool", content: "x"}]}, "input[0].role");
    refused({input: [user([{type: "output_text", text: "x"}])]}, "input[0].content[0].type", /in a user message/);
    refused({input: [user([{type: "input_text"}])]}, "input[0].content[0].text", /is required/);
    refused({input: [user(null)]}, "input[0].content", /is required for a user message/);
    refused({input: [user("q"), call("c1"), output("c9", "x")]}, "input[2].call_id", /"c9" matches no function_call item before it/);
    refused({input: [user("q"), output("c1", "x"), call("c1")]}, "input[1].call_id");
    refused({input: [user("q"), call("c1"), output("c1", 5)]}, "input[2].output", /must be a string or an array/);
    refused({input: [user("q"), {type: "function_call", call_id: "c1", name: "f"}]}, "input[1].arguments", /is required/);
    refused({input: []}, "input", /nothing to answer/);
    refused({input: 5}, "input", /must be a string or an array/);
  });

  test("images and files need a vision tower: in a message and in a function_call_output", () => {
    refused({input: [user([{type: "input_text", text: "what?"}, {type: "input_image", image_url: "data:,"}])]}, "input[0].content[1]",
      /^input\[0\]\.content\[1\]: an image was sent but this server has no vision tower loaded; send text only$/);
    refused({input: [user([{type: "input_file", file_id: "f"}])]}, "input[0].content[0]", /a file was sent/);
    refused({input: [user("q"), call("c1"), output("c1", [{type: "input_image", image_url: "data:,"}])]}, "input[2].output[0]", /an image was sent/);
  });

  test("previous_response_id needs the history in input: refused without an earlier assistant turn", () => {
    refused({input: "and then?", previous_response_id: "resp_0"}, "previous_response_id", /no response store.*send the whole conversation/);
    refused({input: [user("a"), user("b")], previous_response_id: "resp_0"}, "previous_response_id");
    assert.ok(decode({input: [user("a"), {role: "assistant", content: "b"}, user("c")], previous_response_id: "resp_0"}));
    assert.ok(decode({input: [user("a"), call("c1"), output("c1", "x")], previous_response_id: "resp_0"}));
  });

  test("fields that need stored state, and logprobs, are refused", () => {
    refused({input: "x", background: true}, "background");
    refused({input: "x", conversation: "conv_1"}, "conversation");
    refused({input: "x", prompt: {id: "pmpt_1"}}, "prompt");
    refused({input: "x", top_logprobs: 3}, "top_logprobs");
  });

  test("ignored fields are accepted", () => {
    const d = decode({input: "x", store: true, include: ["reasoning.encrypted_content"], prompt_cache_key: "k", metadata: {a: "b"}, user: "u",
      truncation: "auto", service_tier: "flex", text: {verbosity: "low"}, safety_identifier: "s"});
    assert.equal(d.request.responseFormat, null);
  });
});

describe("decodeResponses: tools and tool_choice", () => {
  test("strict defaults to true (absent or null); strict false opts out; the template gets chat-style entries", () => {
    const d = decode({input: "x", tools: [fn("a"), fn("b", {strict: null}), fn("c", {strict: false, description: "C"})]});
    assert.deepEqual(d.request.tools!.tools.map((t) => [t.name, t.strict, t.enforced]), [["a", true, true], ["b", true, true], ["c", false, false]]);
    const entries = d.request.tools!.tools.map((t) => t.templateEntry) as {type: string; function: {name: string; description?: string}}[];
    assert.deepEqual(entries.map((t) => t.function.name), ["a", "b", "c"]);
    assert.deepEqual(entries[2], {type: "function", function: {name: "c", description: "C", parameters: fn("c").parameters}});
  });

  test("hosted tools are left out with a log line; a namespace's functions are used and remembered", () => {
    const before = logger.lines.length;
    const d = decode({input: "x", tools: [{type: "web_search"}, fn("a"),
      {type: "namespace", name: "mcp__srv", description: "d", tools: [fn("b"), {type: "custom", name: "free"}]}, {type: "file_search", vector_store_ids: []}]});
    assert.deepEqual(d.request.tools!.tools.map((t) => t.name), ["a", "b"]);
    assert.deepEqual([...d.namespaces], [["b", "mcp__srv"]]);
    const line = logger.lines.slice(before).find((l) => l.includes("left out"));
    assert.ok(line?.includes("tools[0]:web_search,tools[2].tools[1]:custom,tools[3]:file_search"), line);
  });

  test("tool entries are checked by field", () => {
    refused({input: "x", tools: [fn("a"), {name: "b"}]}, "tools[1].type");
    refused({input: "x", tools: [fn("a"), {type: "namespace", name: "n", tools: [fn("a")]}]}, "tools[1].tools[0].name", /names two tools/);
    refused({input: "x", tools: [{type: "namespace", tools: []}]}, "tools[0].name");
    refused({input: "x", tools: [{type: "function", name: "bad name!"}]}, "tools[0].name");
  });

  test("tool_choice: function by name, allowed_tools narrows with its mode, none hides the tools", () => {
    const named = decode({input: "x", tools: [fn("a"), fn("b")], tool_choice: {type: "function", name: "b"}}).request.tools!;
    assert.deepEqual(named.choice, {kind: "named", name: "b"});
    const allowed = decode({input: "x", tools: [fn("a"), fn("b"), fn("c")], tool_choice: {type: "allowed_tools", mode: "required", tools: [{type: "function", name: "c"}, {type: "mcp", server_label: "s"}]}}).request.tools!;
    assert.deepEqual(allowed.tools.map((t) => t.name), ["c"]);
    assert.deepEqual(allowed.choice, {kind: "required"});
    const none = decode({input: "x", tools: [fn("a")], tool_choice: "none"}).request;
    // Carried with choice none; the pipeline leaves them out of the prompt (test/integration/apply-template.test.ts).
    assert.deepEqual(none.tools!.tools.map((t) => t.name), ["a"]);
    assert.equal(decode({input: "x", tools: [fn("a")], parallel_tool_calls: false}).request.tools!.parallel, false);
  });

  test("tool_choice refusals", () => {
    refused({input: "x", tools: [fn("a")], tool_choice: {type: "function", name: "z"}}, "tool_choice.name", /not one of the request's function tools/);
    refused({input: "x", tools: [fn("a")], tool_choice: {type: "web_search_preview"}}, "tool_choice.type", /does not run/);
    refused({input: "x", tools: [fn("a")], tool_choice: {type: "allowed_tools", mode: "auto", tools: [{type: "function", name: "z"}]}}, "tool_choice.tools[0].name");
    refused({input: "x", tools: [{type: "web_search"}], tool_choice: "required"}, "tool_choice", /needs tools/);
    refused({input: "x", tools: [fn("a")], tool_choice: "always"}, "tool_choice", /must be "auto", "none", "required", \{type: "function", name\}/);
  });
});

describe("decodeResponses: format, reasoning, budget", () => {
  test("text.format json_schema and json_object compile a grammar (in the pipeline); a refused keyword names the schema field", () => {
    const on = {schemas: new SchemaCache(), enabled: true};
    const d = decode({input: "x", text: {format: {type: "json_schema", name: "p", schema: {type: "object", properties: {a: {type: "string"}}, required: ["a"]}, strict: true}}});
    const compiled = compileResponseFormat(d.request.responseFormat, on);
    assert.ok(compiled?.gbnf);
    assert.equal(compiled.rootObject, true);
    assert.ok(compileResponseFormat(decode({input: "x", text: {format: {type: "json_object"}}}).request.responseFormat, on));
    assert.equal(decode({input: "x", text: {format: {type: "text"}}}).request.responseFormat, null);
    const bad = apiErrorOf(() => compileResponseFormat(decode({input: "x", text: {format: {type: "json_schema", name: "p", schema: {type: "string",
      pattern: "a+"}}}}).request.responseFormat, on));
    assert.deepEqual([bad.status, bad.param], [400, "text.format.schema"]);
    assert.match(bad.message, /pattern/);
    refused({input: "x", text: {format: {type: "xml"}}}, "text.format");
  });

  test("reasoning.effort none turns thinking off; summary (or generate_summary) asks for summary text", () => {
    assert.equal(prompt({input: "x", reasoning: {effort: "none"}}).enableThinking, false);
    assert.equal(prompt({input: "x", reasoning: {effort: "high"}}).enableThinking, undefined);
    assert.equal(decode({input: "x", reasoning: {summary: "auto"}}).summary, true);
    assert.equal(decode({input: "x", reasoning: {generate_summary: "concise"}}).summary, true);
    assert.equal(decode({input: "x", reasoning: {effort: "low"}}).summary, false);
    refused({input: "x", reasoning: {effort: "max"}}, "reasoning.effort");
  });

  test("max_output_tokens is the budget; above the cap or disagreeing with max_tokens is refused", () => {
    assert.equal(decode({input: "x", max_output_tokens: 50}).request.maxTokens, 50);
    assert.equal(decode({input: "x"}).request.maxTokens, null);
    refused({input: "x", max_output_tokens: 101}, "max_output_tokens", /above this server's max_tokens_cap \(100\)/);
    refused({input: "x", max_output_tokens: 5, max_tokens: 6}, "max_output_tokens");
  });

  test("sampling fields and stream", () => {
    const d = decode({input: "x", temperature: 0, top_p: 0.5, seed: 7, stream: true});
    assert.equal(d.stream, true);
    assert.equal(d.request.sampling.temperature, 0);
    assert.equal(d.request.sampling.topP, 0.5);
    assert.equal(d.request.sampling.seed, 7);
    refused({input: "x", temperature: 3}, "temperature");
  });
});
