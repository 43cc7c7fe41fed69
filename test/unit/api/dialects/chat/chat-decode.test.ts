// Chat and completions bodies → GenerationRequest: every refusal with its exact message, and the
// decoded request for the accepted shapes.

import {createMemoryLogger} from "../../../../../src/observability/log.ts";
import {newCounters} from "../../../../../src/observability/counters.ts";
import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {ApiError} from "../../../../../src/core/errors.ts";
import {apiErrorOf} from "../../../../fixtures/api-error.ts";
import {decodeChat} from "../../../../../src/api/dialects/chat/decode.ts";
import {SchemaCache} from "../../../../../src/grammar/index.ts";
import {decodeCompletion} from "../../../../../src/api/dialects/completions/decode.ts";
import {compileResponseFormat} from "../../../../../src/pipeline/response-format.ts";

const ctx = {requestId: "req-1", maxTokensCap: 100, strictTools: true, logger: createMemoryLogger(), counters: newCounters()};
const user = (content: unknown) => ({role: "user", content});

function refusedChat(body: unknown): ApiError {
  const err = apiErrorOf(() => decodeChat(body, ctx));
  assert.equal(err.status, 400);
  assert.equal(err.kind, "invalid_request");
  return err;
}

function chatPrompt(body: unknown) {
  const p = decodeChat(body, ctx).request.prompt;
  assert.equal(p.kind, "chat");
  if (p.kind !== "chat") throw new Error("unreachable");
  return p;
}

describe("decodeChat: content parts", () => {
  test("an image_url part is refused by position: no vision tower", () => {
    const err = refusedChat({messages: [user([{type: "text", text: "what is this?"}, {type: "image_url", image_url: {url: "data:,"}}])]});
    assert.equal(err.param, "messages[0].content[1]");
    assert.equal(err.message, "messages[0].content[1]: an image was sent but this server has no vision or audio tower loaded; send text only");
  });

  test("input_audio and file parts are refused the same way", () => {
    assert.equal(refusedChat({messages: [user([{type: "input_audio", input_audio: {}}])]}).message,
      "messages[0].content[0]: audio was sent but this server has no vision or audio tower loaded; send text only");
    assert.equal(refusedChat({messages: [{role: "system", content: "s"}, user([{type: "file", file: {}}])]}).message,
      "messages[1].content[0]: a file was sent but this server has no vision or audio tower loaded; send text only");
  });

  test("an unknown part type is refused naming its type field", () => {
    const err = refusedChat({messages: [user([{type: "video", video: {}}])]});
    assert.equal(err.param, "messages[0].content[0].type");
    assert.equal(err.message, 'messages[0].content[0].type: "video" is not a content part type this server reads (use "text")');
  });

  test("a part type that is an Object.prototype name is an unknown type, not a media part", () => {
    for (const type of ["constructor", "toString", "hasOwnProperty"]) {
      const err = refusedChat({messages: [user([{type}])]});
      assert.equal(err.message, `messages[0].content[0].type: "${type}" is not a content part type this server reads (use "text")`);
    }
  });

  test("text parts are joined; an assistant refusal part contributes its text", () => {
    const p = chatPrompt({messages: [
      user([{type: "text", text: "a"}, {type: "text", text: "b"}]),
      {role: "assistant", content: [{type: "refusal", refusal: "no"}, {type: "text", text: "!"}]},
      user("c"),
    ]});
    assert.deepEqual(p.messages.map((m) => m.content), ["ab", "no!", "c"]);
  });

  test("a refusal part in a user message is refused", () => {
    assert.equal(refusedChat({messages: [user([{type: "refusal", refusal: "x"}])]}).param, "messages[0].content[0].type");
  });
});

describe("decodeChat: budget", () => {
  test("two budget names that disagree", () => {
    const err = refusedChat({messages: [user("hi")], max_tokens: 5, max_completion_tokens: 6});
    assert.equal(err.message, "max_tokens (5) and max_completion_tokens (6) are two names for the same token budget and disagree; send one of them");
  });
  test("above the cap is refused, naming the cap", () => {
    const err = refusedChat({messages: [user("hi")], max_completion_tokens: 101});
    assert.equal(err.message, "max_completion_tokens: 101 is above this server's max_tokens_cap (100); ask for at most 100");
  });
  test("at the cap, and unset", () => {
    assert.equal(decodeChat({messages: [user("hi")], max_tokens: 100}, ctx).request.maxTokens, 100);
    assert.equal(decodeChat({messages: [user("hi")]}, ctx).request.maxTokens, null);
  });
});

describe("decodeChat: features not served", () => {
  test("n = 2 is refused; n = 1 is fine", () => {
    const err = refusedChat({messages: [user("hi")], n: 2});
    assert.equal(err.message, "n: only one choice per request is supported (n = 1)");
    assert.equal(err.param, "n");
    assert.doesNotThrow(() => decodeChat({messages: [user("hi")], n: 1}, ctx));
  });

  test("logprobs are served for scoring; the rule-7 refusals are in logprobs-rules.test.ts", () => {
    const scoring = decodeChat({messages: [user("hi")], logprobs: true, top_logprobs: 5, max_tokens: 1, temperature: 0}, ctx);
    assert.deepEqual(scoring.request.logprobs, {top: 5});
    assert.equal(decodeChat({messages: [user("hi")], logprobs: false}, ctx).request.logprobs, null);
  });

  test("response_format: json_schema and json_object compile to a grammar (in the pipeline); text is free; off with SVC_GRAMMAR=0", () => {
    const on = {schemas: new SchemaCache(), enabled: true};
    const format = (rf: unknown) => decodeChat({messages: [user("hi")], response_format: rf}, ctx).request.responseFormat;
    const object = {type: "object", properties: {a: {type: "integer"}}};
    // Carried as the client sent it, with the field a refusal names.
    const schema = format({type: "json_schema", json_schema: {name: "x", schema: object}});
    assert.deepEqual(schema, {format: {kind: "json_schema", schema: object}, field: "response_format.json_schema.schema"});
    const compiled = compileResponseFormat(schema, on)!;
    assert.match(compiled.gbnf, /root ::=/);
    assert.match(compiled.key, /^[0-9a-f]{64}$/);
    assert.equal(compiled.rootObject, true);
    assert.match(compileResponseFormat(format({type: "json_object"}), on)!.gbnf, /root ::=/);
    assert.equal(format({type: "text"}), null);
    const off = apiErrorOf(() => compileResponseFormat(format({type: "json_object"}), {...on, enabled: false}));
    assert.equal(off.message, "response_format: structured output is turned off on this server (SVC_GRAMMAR=0)");
    const bad = apiErrorOf(() => compileResponseFormat(format({type: "json_schema", json_schema: {name: "x", schema: {type: "string", pattern: "^a"}}}), on));
    assert.equal(bad.status, 400);
    assert.equal(bad.param, "response_format.json_schema.schema");
    assert.match(bad.message, /^response_format\.json_schema\.schema: .*"pattern"/);
  });

  test("tools reach the request once, each with its template entry; an empty list is no tools", () => {
    const tools = [{type: "function", function: {name: "f", parameters: {type: "object", properties: {}}}}];
    const d = decodeChat({messages: [user("hi")], tools}, ctx);
    assert.deepEqual(d.request.tools?.tools.map((t) => t.name), ["f"]);
    // Each decoded tool carries its entry for the template, exactly as the client sent it.
    assert.deepEqual(d.request.tools?.tools.map((t) => t.templateEntry), tools);
    assert.strictEqual(d.request.tools?.tools[0]?.templateEntry, tools[0]);
    assert.equal(decodeChat({messages: [user("hi")], tools: []}, ctx).request.tools, null);
    // tool_choice none: carried, with its choice; the pipeline does not tell the model about them
    // (test/integration/apply-template.test.ts).
    const none = decodeChat({messages: [user("hi")], tools, tool_choice: "none"}, ctx).request.tools;
    assert.deepEqual([none?.choice, none?.tools.map((t) => t.name)], [{kind: "none"}, ["f"]]);
  });

  test("guard passes through the decode as sent (the streaming guard reads and refuses it: test/unit/api/side/guard/guard-options.test.ts)", () => {
    for (const guard of [{mode: "stream"}, true, "nx3guard-stream-0.6b", false, null]) {
      assert.deepEqual(decodeChat({messages: [user("hi")], guard}, ctx).body.guard, guard);
    }
  });
});

describe("decodeChat: continue_final_message and add_generation_prompt", () => {
  test("defaults: add_generation_prompt true, continue false", () => {
    const p = chatPrompt({messages: [user("hi")]});
    assert.equal(p.addGenerationPrompt, true);
    assert.equal(p.continueFinalMessage, false);
  });

  test("continue_final_message with the last message not from the assistant", () => {
    const err = refusedChat({messages: [user("hi")], continue_final_message: true});
    assert.equal(err.message, 'continue_final_message: needs the last message to be from the assistant (it is "user")');
    assert.equal(err.param, "continue_final_message");
  });

  test("continue_final_message with add_generation_prompt true", () => {
    const err = refusedChat({messages: [user("hi"), {role: "assistant", content: "Hel"}], continue_final_message: true, add_generation_prompt: true});
    assert.equal(err.message, "continue_final_message continues the last assistant message, so add_generation_prompt must be false with it");
    assert.equal(err.param, "add_generation_prompt");
  });

  test("continue_final_message on an assistant message: no generation prompt", () => {
    const p = chatPrompt({messages: [user("hi"), {role: "assistant", content: "Hel"}], continue_final_message: true});
    assert.equal(p.continueFinalMessage, true);
    assert.equal(p.addGenerationPrompt, false);
  });

  test("add_generation_prompt false alone is honoured", () => {
    assert.equal(chatPrompt({messages: [user("hi")], add_generation_prompt: false}).addGenerationPrompt, false);
  });
});

describe("decodeChat: thinking", () => {
  test("reasoning_effort none turns thinking off; other efforts leave it to the template", () => {
    assert.equal(chatPrompt({messages: [user("hi")], reasoning_effort: "none"}).enableThinking, false);
    assert.equal(chatPrompt({messages: [user("hi")], reasoning_effort: "high"}).enableThinking, undefined);
    assert.equal(chatPrompt({messages: [user("hi")]}).enableThinking, undefined);
  });

  test("chat_template_kwargs.enable_thinking must be a boolean", () => {
    const err = refusedChat({messages: [user("hi")], chat_template_kwargs: {enable_thinking: "yes"}});
    assert.equal(err.message, "chat_template_kwargs.enable_thinking: must be a boolean");
    assert.equal(err.param, "chat_template_kwargs.enable_thinking");
  });

  test("chat_template_kwargs are passed to the template; enable_thinking read from them", () => {
    const p = chatPrompt({messages: [user("hi")], chat_template_kwargs: {enable_thinking: true, custom: 1}});
    assert.equal(p.enableThinking, true);
    assert.deepEqual(p.templateKwargs, {enable_thinking: true, custom: 1});
  });

  test("reasoning_effort none with enable_thinking true conflicts; with false agrees", () => {
    const err = refusedChat({messages: [user("hi")], reasoning_effort: "none", chat_template_kwargs: {enable_thinking: true}});
    assert.equal(err.param, "reasoning_effort");
    assert.equal(chatPrompt({messages: [user("hi")], reasoning_effort: "none", chat_template_kwargs: {enable_thinking: false}}).enableThinking, false);
  });
});

describe("decodeChat: streaming flags", () => {
  test("return_progress only counts when streaming", () => {
    assert.equal(decodeChat({messages: [user("hi")], stream: true, return_progress: true}, ctx).request.wantProgress, true);
    assert.equal(decodeChat({messages: [user("hi")], return_progress: true}, ctx).request.wantProgress, false);
    assert.equal(decodeChat({messages: [user("hi")], stream: false, return_progress: true}, ctx).request.wantProgress, false);
    assert.equal(decodeChat({messages: [user("hi")], stream: true}, ctx).request.wantProgress, false);
  });

  test("include_usage only counts when streaming", () => {
    const a = decodeChat({messages: [user("hi")], stream: true, stream_options: {include_usage: true}}, ctx);
    assert.equal(a.stream, true);
    assert.equal(a.includeUsage, true);
    const b = decodeChat({messages: [user("hi")], stream_options: {include_usage: true}}, ctx);
    assert.equal(b.stream, false);
    assert.equal(b.includeUsage, false);
  });
});

describe("decodeChat: messages", () => {
  test("a tool message without tool_call_id is refused", () => {
    const err = refusedChat({messages: [user("hi"), {role: "tool", content: "42"}]});
    assert.equal(err.message, "messages[1].tool_call_id: is required for a tool message");
    assert.equal(err.param, "messages[1].tool_call_id");
  });

  test("an assistant message with null content and tool calls is fine; call ids default by position", () => {
    const p = chatPrompt({messages: [
      user("hi"),
      {role: "assistant", content: null, tool_calls: [{type: "function", function: {name: "f", arguments: "{}"}}, {id: "given", function: {name: "g", arguments: "[]"}}]},
      {role: "tool", content: "r", tool_call_id: "call_1_0"},
    ]});
    assert.deepEqual(p.messages, [
      {role: "user", content: "hi"},
      {role: "assistant", content: "", tool_calls: [
        {id: "call_1_0", type: "function", function: {name: "f", arguments: "{}"}},
        {id: "given", type: "function", function: {name: "g", arguments: "[]"}},
      ]},
      {role: "tool", content: "r", tool_call_id: "call_1_0"},
    ]);
  });

  test("a user message with null content is refused", () => {
    const err = refusedChat({messages: [{role: "user", content: null}]});
    assert.equal(err.message, "messages[0].content: is required for a user message");
  });

  test("name and reasoning_content are carried", () => {
    const p = chatPrompt({messages: [{role: "user", content: "hi", name: "ann"}, {role: "assistant", content: "yo", reasoning_content: "think"}]});
    assert.deepEqual(p.messages, [{role: "user", content: "hi", name: "ann"}, {role: "assistant", content: "yo", reasoning_content: "think"}]);
  });
});

describe("decodeChat: the request", () => {
  test("a minimal body", () => {
    const d = decodeChat({messages: [user("hi")], seed: 3}, ctx);
    assert.equal(d.stream, false);
    assert.equal(d.includeUsage, false);
    assert.deepEqual(d.request, {
      prompt: {kind: "chat", messages: [{role: "user", content: "hi"}], addGenerationPrompt: true, continueFinalMessage: false, enableThinking: undefined, reasoningEffort: undefined,
        templateKwargs: undefined},
      promptField: "messages",
      maxTokens: null,
      sampling: {temperature: 1, topK: 40, topP: 1, minP: 0, seed: 3, presencePenalty: 0, frequencyPenalty: 0, repeatPenalty: 1, repeatLastN: 64},
      stop: [],
      stopTokenIds: [],
      wantProgress: false,
      logprobs: null,
      responseFormat: null,
      tools: null,
    });
  });

  test("reasoning_effort reaches the prompt (templates that read it get it)", () => {
    const prompt = decodeChat({messages: [user("hi")], reasoning_effort: "high"}, ctx).request.prompt;
    assert.equal(prompt.kind === "chat" ? prompt.reasoningEffort : null, "high");
  });

  test("stop, stop_token_ids and sampling are decoded", () => {
    const r = decodeChat({messages: [user("hi")], stop: "###", stop_token_ids: [2, 7], temperature: 0, seed: -1}, ctx).request;
    assert.deepEqual(r.stop, ["###"]);
    assert.deepEqual(r.stopTokenIds, [2, 7]);
    assert.equal(r.sampling.temperature, 0);
    assert.equal(r.sampling.seed, 4294967295);
  });

  test("schema errors surface as 400 before anything else", () => {
    assert.equal(refusedChat({messages: []}).message, "messages: must have at least 1 item(s)");
    assert.equal(refusedChat("hi").message, "the request body must be a JSON object");
  });
});

describe("decodeCompletion", () => {
  const decode = (body: unknown) => decodeCompletion(body, ctx);
  const refused = (body: unknown) => {
    const err = apiErrorOf(() => decode(body));
    assert.equal(err.status, 400);
    return err;
  };

  test("a string prompt is text, as sent", () => {
    assert.deepEqual(decode({prompt: "Once upon"}).request.prompt, {kind: "text", text: "Once upon"});
    assert.deepEqual(decode({prompt: ""}).request.prompt, {kind: "text", text: ""});
  });

  test("token ids are tokens", () => {
    assert.deepEqual(decode({prompt: [1, 2, 3]}).request.prompt, {kind: "tokens", tokens: [1, 2, 3]});
  });

  test("a one-element array of a string or of token ids is that prompt", () => {
    assert.deepEqual(decode({prompt: ["only"]}).request.prompt, {kind: "text", text: "only"});
    assert.deepEqual(decode({prompt: [[4, 5]]}).request.prompt, {kind: "tokens", tokens: [4, 5]});
  });

  test("several prompts are refused", () => {
    const err = refused({prompt: ["a", "b"]});
    assert.equal(err.message, "prompt: send one prompt per request (an array of several prompts is not supported)");
    assert.equal(err.param, "prompt");
    assert.equal(refused({prompt: [[1], [2]]}).param, "prompt");
  });

  test("an empty array is refused", () => {
    assert.equal(refused({prompt: []}).message, "prompt: must not be empty");
  });

  test("echo, suffix, best_of > 1, n > 1, and alternatives without max_tokens 1 are refused", () => {
    assert.equal(refused({prompt: "x", echo: true}).message, "echo: echoing the prompt back is not supported");
    assert.equal(refused({prompt: "x", suffix: "end"}).message, "suffix: fill-in-the-middle suffixes are not supported");
    assert.equal(refused({prompt: "x", best_of: 2}).message, "best_of: only 1 is supported");
    assert.equal(refused({prompt: "x", n: 2}).message, "n: only one choice per request is supported (n = 1)");
    assert.equal(refused({prompt: "x", logprobs: 1}).message,
      "logprobs: alternatives are for scoring one token; send max_tokens: 1 (got no budget (unlimited))");
    assert.deepEqual(decode({prompt: "x", logprobs: 3, max_tokens: 1}).request.logprobs, {top: 3});
  });

  test("their neutral values are accepted", () => {
    assert.doesNotThrow(() => decode({prompt: "x", echo: false, suffix: null, best_of: 1, n: 1, logprobs: 0}));
  });

  test("budget over the cap refused; streaming flags", () => {
    assert.equal(refused({prompt: "x", max_tokens: 101}).message, "max_tokens: 101 is above this server's max_tokens_cap (100); ask for at most 100");
    const d = decode({prompt: "x", max_tokens: 9, stream: true, return_progress: true, stream_options: {include_usage: true}, stop: ["\n\n"]});
    assert.equal(d.request.maxTokens, 9);
    assert.equal(d.stream, true);
    assert.equal(d.includeUsage, true);
    assert.equal(d.request.wantProgress, true);
    assert.deepEqual(d.request.stop, ["\n\n"]);
    // Transport facts travel beside the request (RequestTransport), never in it.
    assert.deepEqual(["requestId", "signal", "streamed", "session"].filter((k) => k in d.request), []);
  });

  test("a missing prompt is a 400 naming prompt", () => {
    assert.equal(refused({}).param, "prompt");
  });
});
