// Messages-style bodies → GenerationRequest: content blocks to template messages, thinking and its
// replay from signatures, tools and tool_choice, the budget and the cap, what is logged once, and every
// refusal naming its field.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {decodeMessages, LogOnce, type MessagesDecodeContext} from "../../../../../src/api/dialects/messages/decode.ts";
import {signReasoning} from "../../../../../src/api/dialects/messages/signature.ts";
import {callIdOf, toolUseId} from "../../../../../src/api/dialects/messages/tool-use-ids.ts";
import {SchemaCache} from "../../../../../src/grammar/index.ts";
import {compileResponseFormat} from "../../../../../src/pipeline/response-format.ts";
import {newCounters} from "../../../../../src/observability/counters.ts";
import {createMemoryLogger} from "../../../../../src/observability/log.ts";
import {apiErrorOf} from "../../../../fixtures/api-error.ts";

function context(headers: Record<string, string> = {}): MessagesDecodeContext & {logger: ReturnType<typeof createMemoryLogger>} {
  const logger = createMemoryLogger();
  return {requestId: "msg_1", maxTokensCap: 100, strictTools: true, logger, counters: newCounters(), headers, notes: new LogOnce(logger)};
}

const user = (content: unknown) => ({role: "user", content});
const assistant = (content: unknown) => ({role: "assistant", content});
const body = (extra: object) => ({model: "claude-x", max_tokens: 50, messages: [user("Hi")], ...extra});
const decode = (b: object, ctx = context(), mode: "create" | "count" = "create") => decodeMessages(b, ctx, mode);

function prompt(b: object, ctx = context()) {
  const p = decode(b, ctx).request.prompt;
  if (p.kind !== "chat") throw new Error("not a chat prompt");
  return p;
}

function refused(b: object, mode: "create" | "count" = "create") {
  const err = apiErrorOf(() => decode(b, context(), mode));
  assert.equal(err.status, 400);
  return err;
}

describe("decodeMessages: conversation", () => {
  test("system (string or blocks) leads; a system turn inside messages is user text; text blocks are joined by a blank line", () => {
    assert.deepEqual(prompt(body({system: [{type: "text", text: "A"}, {type: "text", text: "B"}], messages: [{role: "system", content: "S"}, user([{type: "text", text: "x"}, {type: "text", text: "y"}])]})).messages,
      [{role: "system", content: "A\n\nB"}, {role: "user", content: "S"}, {role: "user", content: "x\n\ny"}]);
    assert.deepEqual(prompt(body({system: "Be brief."})).messages[0], {role: "system", content: "Be brief."});
  });

  test("tool_use becomes tool_calls; tool_result becomes tool messages in order, is_error said in the text; toolu_ ids are the server's call_ ids", () => {
    const p = prompt(body({messages: [user("Weather?"),
      assistant([{type: "text", text: "Checking."}, {type: "tool_use", id: "toolu_a", name: "w", input: {city: "Oslo"}}, {type: "tool_use", id: "toolu_b", name: "w", input: {}}]),
      user([{type: "tool_result", tool_use_id: "toolu_a", content: "sunny"}, {type: "tool_result", tool_use_id: "toolu_b", is_error: true, content: [{type: "text", text: "timeout"}]},
        {type: "text", text: "Thanks"}])]}));
    assert.deepEqual(p.messages.slice(1), [
      {role: "assistant", content: "Checking.", tool_calls: [{id: "call_a", type: "function", function: {name: "w", arguments: "{\"city\":\"Oslo\"}"}},
        {id: "call_b", type: "function", function: {name: "w", arguments: "{}"}}]},
      {role: "tool", content: "sunny", tool_call_id: "call_a"},
      {role: "tool", content: "Error: timeout", tool_call_id: "call_b"},
      {role: "user", content: "Thanks"},
    ]);
    assert.equal(p.addGenerationPrompt, true);
    assert.equal(p.continueFinalMessage, false);
  });

  test("a thinking block replays its signature's reasoning, whatever its text; redacted thinking is dropped", () => {
    const signature = signReasoning("Let me think: ünïcode ✓");
    for (const thinking of ["Let me think: ünïcode ✓", "", "something else"]) {
      const p = prompt(body({messages: [user("Q"), assistant([{type: "redacted_thinking", data: "xx"}, {type: "thinking", thinking, signature}, {type: "text", text: "A"}]), user("Q2")]}));
      assert.deepEqual(p.messages[1], {role: "assistant", content: "A", reasoning_content: "Let me think: ünïcode ✓"});
    }
  });

  test("a thinking block signed by another server (Anthropic's opaque form) is dropped, not refused", () => {
    const p = prompt(body({messages: [user("Q"), assistant([{type: "thinking", thinking: "hm", signature: "EqQBCkYIARgCKkD"}, {type: "text", text: "A"}]), user("Q2")]}));
    assert.deepEqual(p.messages[1], {role: "assistant", content: "A"});
  });

  test("a final assistant message is a prefill: continued, no generation prompt", () => {
    const p = prompt(body({messages: [user("Q"), assistant("The answer is")]}));
    assert.equal(p.continueFinalMessage, true);
    assert.equal(p.addGenerationPrompt, false);
  });
});

describe("decodeMessages: thinking, effort, budget", () => {
  const thinkingOf = (extra: object) => {
    const r = decode(body(extra)).request;
    return {enable: r.prompt.kind === "chat" ? r.prompt.enableThinking : undefined, budget: r.reasoningBudget};
  };

  test("off unless asked; enabled passes its budget; adaptive has none; effort none turns it off", () => {
    assert.deepEqual(thinkingOf({}), {enable: false, budget: null});
    assert.deepEqual(thinkingOf({thinking: {type: "disabled"}}), {enable: false, budget: null});
    assert.deepEqual(thinkingOf({thinking: {type: "enabled", budget_tokens: 20}}), {enable: true, budget: 20});
    assert.deepEqual(thinkingOf({thinking: {type: "adaptive"}}), {enable: true, budget: null});
    assert.deepEqual(thinkingOf({output_config: {effort: "none"}}), {enable: false, budget: null});
    assert.deepEqual(thinkingOf({thinking: {type: "adaptive"}, output_config: {effort: "high"}}), {enable: true, budget: null});
    assert.equal(decode(body({thinking: {type: "enabled", budget_tokens: 20, display: "omitted"}})).thinkingDisplay, "omitted");
    // Claude Code 2.1.330 sends display "updates"; any display but "omitted" shows the text.
    assert.equal(decode(body({thinking: {type: "adaptive", display: "updates"}})).thinkingDisplay, "summarized");
  });

  test("refusals: budget not below max_tokens, budget missing, effort none beside thinking on, unknown type", () => {
    const e1 = refused(body({max_tokens: 20, thinking: {type: "enabled", budget_tokens: 20}}));
    assert.equal(e1.param, "thinking.budget_tokens");
    assert.match(e1.message, /must be less than max_tokens \(20 >= 20\)/);
    assert.equal(refused(body({thinking: {type: "enabled"}})).param, "thinking.budget_tokens");
    assert.equal(refused(body({thinking: {type: "enabled", budget_tokens: 5}, output_config: {effort: "none"}})).param, "output_config.effort");
    assert.equal(refused(body({thinking: {type: "sometimes"}})).param, "thinking.type");
  });

  test("max_tokens is required on create, not on count; above the cap it runs with the cap, logged once", () => {
    assert.equal(refused({messages: [user("Hi")]}).param, "max_tokens");
    assert.equal(decode({messages: [user("Hi")]}, context(), "count").request.maxTokens, null);
    const ctx = context();
    assert.equal(decode(body({max_tokens: 5000}), ctx).request.maxTokens, 100);
    assert.equal(decode(body({max_tokens: 7000}), ctx).request.maxTokens, 100);
    assert.equal(decode(body({max_tokens: 60}), ctx).request.maxTokens, 60);
    assert.equal(ctx.logger.lines.filter((l) => /max_tokens above max_tokens_cap/.test(l)).length, 1);
  });

  test("stop_sequences, sampling fields and output_config.format reach the request", () => {
    const r = decode(body({stop_sequences: ["END"], temperature: 0, top_k: 5, top_p: 0.5,
      output_config: {format: {type: "json_schema", schema: {type: "object", properties: {a: {type: "string"}}, required: ["a"]}}}})).request;
    assert.deepEqual(r.stop, ["END"]);
    assert.deepEqual([r.sampling.temperature, r.sampling.topK, r.sampling.topP], [0, 5, 0.5]);
    const on = {schemas: new SchemaCache(), enabled: true};
    assert.equal(compileResponseFormat(r.responseFormat, on)?.rootObject, true);
    // The pipeline compiles it; its refusal names the Messages field.
    const bad = apiErrorOf(() => compileResponseFormat(decode(body({output_config: {format: {type: "json_schema", schema: {type: "string",
      pattern: "a+"}}}})).request.responseFormat, on));
    assert.equal(bad.status, 400);
    assert.match(bad.message, /^output_config\.format\.schema: .*pattern/);
  });
});

describe("decodeMessages: tools", () => {
  const custom = {name: "get_weather", description: "Weather", input_schema: {type: "object", properties: {city: {type: "string"}}, required: ["city"]}, strict: true};

  test("custom tools are offered (chat-style for the template); vendor server tools are dropped, each type logged once", () => {
    const ctx = context();
    const b = body({tools: [{type: "web_search_20250305", name: "web_search"}, custom, {type: "custom", name: "t2", input_schema: {type: "object"}}, {type: "bash_20250124", name: "bash"}]});
    const r = decode(b, ctx).request;
    decode(b, ctx);
    assert.deepEqual(r.tools!.tools.map((t) => [t.name, t.strict, t.enforced]), [["get_weather", true, true], ["t2", false, false]]);
    assert.deepEqual(r.tools!.tools[0]!.templateEntry, {type: "function", function: {name: "get_weather", description: "Weather", parameters: custom.input_schema}});
    const logged = ctx.logger.lines.filter((l) => /server tools of the vendor dropped/.test(l));
    assert.equal(logged.length, 1);
    assert.match(logged[0]!, /types=web_search_20250305,bash_20250124/);
  });

  test("tool_choice: any → required, tool → named, none hides the tools, disable_parallel_tool_use → one call", () => {
    const choice = (tc: object) => decode(body({tools: [custom], tool_choice: tc})).request;
    assert.deepEqual(choice({type: "any"}).tools!.choice, {kind: "required"});
    assert.deepEqual(choice({type: "auto"}).tools!.choice, {kind: "auto"});
    assert.deepEqual(choice({type: "tool", name: "get_weather"}).tools!.choice, {kind: "named", name: "get_weather"});
    const none = choice({type: "none"});
    assert.deepEqual(none.tools!.choice, {kind: "none"});
    // Carried with choice none; the pipeline leaves them out of the prompt (test/integration/apply-template.test.ts).
    assert.deepEqual(none.tools!.tools.map((t) => t.name), ["get_weather"]);
    assert.equal(choice({type: "auto", disable_parallel_tool_use: true}).tools!.parallel, false);
    assert.equal(choice({type: "auto"}).tools!.parallel, true);
    assert.equal(refused(body({tools: [custom], tool_choice: {type: "tool", name: "nope"}})).param, "tool_choice.name");
    assert.equal(refused(body({tool_choice: {type: "any"}})).param, "tool_choice");
  });
});

describe("decodeMessages: what is named once in the log", () => {
  test("unused top-level fields, each once per process; an unknown msg-version once", () => {
    const ctx = context({"msg-version": "2031-01-01"});
    decode(body({context_management: {}, service_tier: "auto", metadata: {user_id: "u"}}), ctx);
    decode(body({context_management: {}, container: "c"}), ctx);
    const fields = ctx.logger.lines.filter((l) => /fields accepted but not used/.test(l));
    assert.deepEqual(fields.map((l) => /fields=(\S+)/.exec(l)![1]), ["context_management,service_tier", "container"]);
    assert.equal(ctx.logger.lines.filter((l) => /unknown msg-version.*version=2031-01-01/.test(l)).length, 1);
    const known = context({"anthropic-version": "2023-06-01"});
    decode(body({}), known);
    assert.equal(known.logger.lines.length, 0);
  });
});

describe("decodeMessages: refusals name the field", () => {
  const sig = signReasoning("r");
  const cases: [string, object, string, RegExp][] = [
    ["unknown block type", {messages: [user([{type: "text", text: "a"}, {type: "search_result", content: []}])]}, "messages[0].content[1].type", /search_result/],
    ["image", {messages: [user([{type: "image", source: {}}])]}, "messages[0].content[0]", /vision tower/],
    ["image in a tool_result", {messages: [user("q"), assistant([{type: "tool_use", id: "t", name: "w", input: {}}]),
      user([{type: "tool_result", tool_use_id: "t", content: [{type: "image", source: {}}]}])]}, "messages[2].content[0].content[0]", /vision tower/],
    ["plain-text document", {messages: [user([{type: "document", source: {type: "text", media_type: "text/plain", data: "x"}}])]}, "messages[0].content[0]", /document/],
    ["tool_result in an assistant message", {messages: [user("q"), assistant([{type: "tool_result", tool_use_id: "t"}])]}, "messages[1].content[0]", /wrong place/],
    ["tool_result with no tool_use before it", {messages: [user([{type: "tool_result", tool_use_id: "t", content: "x"}])]}, "messages[0].content[0].tool_use_id", /wrong place/],
    ["tool_result in a system turn", {messages: [user("q"), assistant([{type: "tool_use", id: "t", name: "w", input: {}}]),
      {role: "system", content: [{type: "tool_result", tool_use_id: "t"}]}]}, "messages[2].content[0]", /wrong place/],
    ["thinking in a user message", {messages: [user([{type: "thinking", thinking: "r", signature: sig}])]}, "messages[0].content[0].type", /assistant/],
    ["malformed signature", {messages: [user("q"), assistant([{type: "thinking", thinking: "r", signature: "svc1.abc"}]), user("q")]}, "messages[1].content[0].signature", /malformed/],
    ["altered signature (hash no longer matches)", {messages: [user("q"), assistant([{type: "thinking", thinking: "r", signature: "svc1.cg.0000000000000000"}]), user("q")]},
      "messages[1].content[0].signature", /altered/],
    ["signature missing", {messages: [user("q"), assistant([{type: "thinking", thinking: "r"}]), user("q")]}, "messages[1].content[0].signature", /required/],
    ["tool_use input not an object", {messages: [user("q"), assistant([{type: "tool_use", id: "t", name: "w", input: "x"}]), user("q")]}, "messages[1].content[0].input", /object/],
    ["a final assistant turn with tool_use", {messages: [user("q"), assistant([{type: "tool_use", id: "t", name: "w", input: {}}])]}, "messages[1]", /tool_result/],
    ["a role Anthropic has not", {messages: [{role: "tool", content: "x"}]}, "messages[0].role", /user/],
  ];
  for (const [what, b, field, re] of cases) {
    test(what, () => {
      const err = refused(body(b));
      assert.ok(err.message.startsWith(`${field}: `) || err.param === field, `${err.param}: ${err.message}`);
      assert.match(err.message, re);
      // count_tokens decodes the same conversation, so it refuses the same way.
      assert.equal(refused(body(b), "count").message, err.message);
    });
  }
});

describe("tool-use ids", () => {
  test("a call id shown as toolu_ comes back as the call id the pipeline remembers; other ids pass through", () => {
    assert.equal(toolUseId("call_9f2"), "toolu_9f2");
    assert.equal(callIdOf(toolUseId("call_9f2")), "call_9f2");
    assert.equal(callIdOf("toolu_01A09q90qw90lq917835lq9"), "call_01A09q90qw90lq917835lq9");
    assert.equal(callIdOf("fc_123"), "fc_123", "an id of another form is kept as it is");
  });
});
