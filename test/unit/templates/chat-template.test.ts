// Rendering the model's own chat template: the real SmolLM2 template (ChatML) and a Qwen3-style
// fixture with thinking and tools. Expected prompts are written out in full.
import {describe, test} from "node:test";
import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {readFileSync} from "node:fs";
import {ChatTemplate, TemplateRenderError, type RenderOptions, type TemplateMessage} from "../../../src/templates/chat-template.ts";
import {strftime} from "../../../src/templates/template-env.ts";

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/templates/${name}`, import.meta.url), "utf8");
const SMOL_SOURCE = fixture("smollm2.jinja");
const QWEN_SOURCE = fixture("qwen3-style.jinja");
const tokens = {bosToken: "<|im_start|>", eosToken: "<|im_end|>"};
const smol = ChatTemplate.create(SMOL_SOURCE, {...tokens, origin: "gguf:tokenizer.chat_template"});
const qwen = ChatTemplate.create(QWEN_SOURCE, {...tokens, origin: "test/fixtures/templates/qwen3-style.jinja"});

const GEN: RenderOptions = {addGenerationPrompt: true, continueFinalMessage: false};
const NO_GEN: RenderOptions = {addGenerationPrompt: false, continueFinalMessage: false};
const CONTINUE: RenderOptions = {addGenerationPrompt: false, continueFinalMessage: true};
const SMOL_DEFAULT_SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

const inline = (source: string) => ChatTemplate.create(source, {...tokens, origin: "inline"});
const rejects = (fn: () => unknown, message: string | RegExp) =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof TemplateRenderError, `expected TemplateRenderError, got ${String(err)}`);
    if (typeof message === "string") assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });

test("SmolLM2 fixture is the GGUF template byte for byte", () => {
  assert.equal(SMOL_SOURCE,
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n" +
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}" +
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}" +
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}");
});

test("SmolLM2: user turn with generation prompt gets the default system turn", () => {
  const {text} = smol.render([{role: "user", content: "Hello"}], GEN);
  assert.equal(text, SMOL_DEFAULT_SYSTEM + "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
});

test("SmolLM2: full conversation without generation prompt", () => {
  const {text} = smol.render([
    {role: "system", content: "Be brief."},
    {role: "user", content: "Hi"},
    {role: "assistant", content: "Hello!"},
  ], NO_GEN);
  assert.equal(text,
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n");
});

test("developer role becomes system when the template does not know it", () => {
  assert.equal(smol.supportsDeveloperRole, false);
  const alone = smol.render([{role: "developer", content: "Answer in French."}, {role: "user", content: "Hi"}], GEN);
  assert.equal(alone.text,
    "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");

  // Adjacent system/developer messages merge into the one system turn the template expects.
  const merged = smol.render([
    {role: "system", content: "You are terse."},
    {role: "developer", content: "Answer in French."},
    {role: "user", content: "Hi"},
  ], NO_GEN);
  assert.equal(merged.text,
    "<|im_start|>system\nYou are terse.\n\nAnswer in French.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");

  // Later in the conversation it stays where it is, as a system turn.
  const later = qwen.render([
    {role: "user", content: "Hi"},
    {role: "assistant", content: "Hello"},
    {role: "developer", content: "Now be formal."},
    {role: "user", content: "Bye"},
  ], NO_GEN);
  assert.equal(later.text,
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n" +
    "<|im_start|>system\nNow be formal.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");

  // Plain system runs are the client's business and are not merged.
  const systems = smol.render([{role: "system", content: "A"}, {role: "system", content: "B"}], NO_GEN);
  assert.equal(systems.text, "<|im_start|>system\nA<|im_end|>\n<|im_start|>system\nB<|im_end|>\n");
});

test("developer role is passed through to a template that handles it", () => {
  const t = inline("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{# developer #}");
  assert.equal(t.supportsDeveloperRole, true);
  assert.equal(t.render([{role: "developer", content: "D"}, {role: "user", content: "U"}], NO_GEN).text, "[developer]D[user]U");
});

test("tool role: SmolLM2 renders it as its own turn", () => {
  const {text} = smol.render([
    {role: "user", content: "Weather?"},
    {role: "assistant", content: "Checking."},
    {role: "tool", content: "{\"temp\": 21}", tool_call_id: "call_1"},
  ], GEN);
  assert.equal(text, SMOL_DEFAULT_SYSTEM +
    "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\nChecking.<|im_end|>\n" +
    "<|im_start|>tool\n{\"temp\": 21}<|im_end|>\n<|im_start|>assistant\n");
});

const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the weather",
    parameters: {type: "object", properties: {city: {type: "string"}}, required: ["city"]},
  },
};
const QWEN_TOOLS_BLOCK =
  "<|im_start|>system\nYou are a weather bot.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
  "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", " +
  "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n" +
  "</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
  "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

test("Qwen3-style: tools block, assistant tool_calls with reasoning, tool results folded into a user turn", () => {
  assert.equal(qwen.supportsTools, true);
  assert.equal(qwen.supportsThinking, true);
  assert.equal(qwen.toolArgumentsAsObject, false);
  const messages: TemplateMessage[] = [
    {role: "system", content: "You are a weather bot."},
    {role: "user", content: "Weather in Paris and Rome?"},
    {
      role: "assistant", content: "", reasoning_content: "Two cities, two calls.",
      tool_calls: [
        {id: "call_1", type: "function", function: {name: "get_weather", arguments: "{\"city\":\"Paris\"}"}},
        {id: "call_2", type: "function", function: {name: "get_weather", arguments: "{\"city\":\"Rome\"}"}},
      ],
    },
    {role: "tool", content: "18C", tool_call_id: "call_1"},
    {role: "tool", content: "25C", tool_call_id: "call_2"},
  ];
  const {text} = qwen.render(messages, {...GEN, tools: [WEATHER_TOOL]});
  assert.equal(text, QWEN_TOOLS_BLOCK +
    "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n" +
    "<|im_start|>assistant\n<think>\nTwo cities, two calls.\n</think>\n\n" +
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>\n" +
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Rome\"}}\n</tool_call><|im_end|>\n" +
    "<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n<tool_response>\n25C\n</tool_response><|im_end|>\n" +
    "<|im_start|>assistant\n");
});

test("tools variable is absent unless tools are given", () => {
  const t = inline("{{ tools is defined }}|{{ tools | length if tools is defined else 0 }}");
  assert.equal(t.render([{role: "user", content: "x"}], NO_GEN).text, "false|0");
  assert.equal(t.render([{role: "user", content: "x"}], {...NO_GEN, tools: [WEATHER_TOOL]}).text, "true|1");
});

test("a template that prints `arguments | tojson` gets arguments as an object", () => {
  const t = inline(
    "{% for m in messages %}{{ m.role }}:{{ m.content }}" +
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>{% endfor %}" +
    "{{ '\\n' }}{% endfor %}");
  assert.equal(t.toolArgumentsAsObject, true);
  const {text} = t.render([
    {role: "user", content: "Paris?"},
    {role: "assistant", content: "", tool_calls: [{id: "c1", type: "function", function: {name: "get_weather", arguments: "{\"city\":\"Paris\",\"days\":2}"}}]},
  ], NO_GEN);
  assert.equal(text, "user:Paris?\nassistant:<call>get_weather {\"city\": \"Paris\", \"days\": 2}</call>\n");
});

test("continue_final_message ends exactly at the partial assistant text", () => {
  const messages: TemplateMessage[] = [
    {role: "user", content: "Classify: great movie"},
    {role: "assistant", content: "Sentiment:"},
  ];
  assert.equal(smol.render(messages, CONTINUE).text,
    SMOL_DEFAULT_SYSTEM + "<|im_start|>user\nClassify: great movie<|im_end|>\n<|im_start|>assistant\nSentiment:");
});

test("continue_final_message with an empty partial ends at the opened assistant turn", () => {
  const {text} = smol.render([{role: "user", content: "Hi"}, {role: "assistant", content: ""}], CONTINUE);
  assert.equal(text, SMOL_DEFAULT_SYSTEM + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
});

test("continue_final_message with a partial ending in a double quote", () => {
  const messages: TemplateMessage[] = [
    {role: "system", content: "Label the review."},
    {role: "user", content: "Review: loved it"},
    {role: "assistant", content: "{\"label\": \""},
  ];
  assert.equal(smol.render(messages, CONTINUE).text,
    "<|im_start|>system\nLabel the review.<|im_end|>\n<|im_start|>user\nReview: loved it<|im_end|>\n<|im_start|>assistant\n{\"label\": \"");
  // The classifier pattern on a thinking template: thinking off, the empty think block precedes the prefix.
  assert.equal(qwen.render(messages, {...CONTINUE, kwargs: {enable_thinking: false}}).text,
    "<|im_start|>system\nLabel the review.<|im_end|>\n<|im_start|>user\nReview: loved it<|im_end|>\n" +
    "<|im_start|>assistant\n<think>\n\n</think>\n\n{\"label\": \"");
});

test("continue_final_message survives a template that trims content", () => {
  const t = inline("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor %}");
  const {text} = t.render([{role: "user", content: "Q"}, {role: "assistant", content: "Answer: "}], CONTINUE);
  assert.equal(text, "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nAnswer: ");
});

test("continue_final_message refuses a last message that is not assistant, or a generation prompt", () => {
  rejects(() => smol.render([{role: "user", content: "Hi"}], CONTINUE),
    "messages[0].role: continue_final_message needs the last message to be assistant");
  rejects(() => smol.render([{role: "user", content: "Hi"}, {role: "assistant", content: "x"}], {...CONTINUE, addGenerationPrompt: true}),
    "continue_final_message and add_generation_prompt cannot both be true");
});

test("enable_thinking: default, true and false", () => {
  const messages: TemplateMessage[] = [{role: "user", content: "2+2?"}];
  const prefix = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
  assert.equal(qwen.render(messages, GEN).text, prefix);
  assert.equal(qwen.render(messages, {...GEN, enableThinking: true}).text, prefix);
  assert.equal(qwen.render(messages, {...GEN, enableThinking: false}).text, prefix + "<think>\n\n</think>\n\n");
  assert.equal(qwen.render(messages, {...GEN, kwargs: {enable_thinking: false}}).text, prefix + "<think>\n\n</think>\n\n");
  // chat_template_kwargs wins over the separate control.
  assert.equal(qwen.render(messages, {...GEN, enableThinking: true, kwargs: {enable_thinking: false}}).text,
    prefix + "<think>\n\n</think>\n\n");
  assert.equal(qwen.render(messages, {...GEN, enableThinking: false, kwargs: {enable_thinking: true}}).text, prefix);
});

test("chat_template_kwargs: every key reaches the template; server variables are reserved", () => {
  const t = inline("{{ persona }}|{{ depth * 2 }}|{{ flags.verbose }}|{% for m in messages %}{{ m.content }}{% endfor %}");
  const {text} = t.render([{role: "user", content: "hi"}], {...NO_GEN, kwargs: {persona: "pirate", depth: 3, flags: {verbose: true}}});
  assert.equal(text, "pirate|6|true|hi");
  rejects(() => t.render([{role: "user", content: "hi"}], {...NO_GEN, kwargs: {messages: []}}),
    "chat_template_kwargs.messages: reserved, cannot be set");
  rejects(() => t.render([{role: "user", content: "hi"}], {...NO_GEN, kwargs: {raise_exception: 1}}),
    "chat_template_kwargs.raise_exception: reserved, cannot be set");
});

test("bos_token, eos_token and strftime_now are available", () => {
  const t = inline("{{ bos_token }}{{ eos_token }}|{{ strftime_now('%Y-%m') }}");
  const now = new Date();
  const month = `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, "0")}`;
  assert.equal(t.render([{role: "user", content: "x"}], NO_GEN).text, `<|im_start|><|im_end|>|${month}`);
});

test("strftime follows Python's C-locale codes, including glibc's unpadded forms", () => {
  assert.equal(strftime(new Date(2024, 6, 4, 15, 5, 9), "%d %b %Y|%-d %B|%H:%M:%S %p %I|%A %a|%j|%y|%%|%Q"),
    "04 Jul 2024|4 July|15:05:09 PM 03|Thursday Thu|186|24|%|%Q");
  assert.equal(strftime(new Date(2025, 0, 1, 0, 0, 0), "%j %I %p %-m"), "001 12 AM 1");
});

test("raise_exception surfaces as TemplateRenderError with the template's message", () => {
  const t = inline(
    "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('Tool messages are not supported') }}{% endif %}" +
    "{{ m.content }}{% endfor %}");
  assert.equal(t.render([{role: "user", content: "ok"}], NO_GEN).text, "ok");
  rejects(() => t.render([{role: "tool", content: "r", tool_call_id: "c"}], NO_GEN), "Tool messages are not supported");
});

test("template runtime errors and bad shapes are TemplateRenderError", () => {
  rejects(() => inline("{{ messages[0].content.nope() }}").render([{role: "user", content: "x"}], NO_GEN), /^chat template error: /);
  rejects(() => smol.render([], GEN), "messages: must contain at least one message");
  rejects(() => smol.render([{role: "robot" as "user", content: "x"}], GEN),
    "messages[0].role: must be one of system, developer, user, assistant, tool");
});

test("a template that does not parse is refused at creation, naming its origin", () => {
  rejects(() => ChatTemplate.create("{% for m in messages %}{{ m.content }", {...tokens, origin: "/models/broken.jinja"}),
    /^chat template from \/models\/broken\.jinja failed to parse: /);
});

test("sha256, origin and capability flags", () => {
  assert.equal(smol.sha256, createHash("sha256").update(SMOL_SOURCE).digest("hex"));
  assert.equal(qwen.sha256, createHash("sha256").update(QWEN_SOURCE).digest("hex"));
  assert.equal(smol.origin, "gguf:tokenizer.chat_template");
  assert.deepEqual([smol.supportsTools, smol.supportsThinking, smol.toolArgumentsAsObject], [false, false, false]);
  assert.deepEqual([qwen.supportsDeveloperRole, qwen.supportsTools, qwen.supportsThinking], [false, true, true]);
});

test("self-check: ok for both templates, a reason otherwise, and creation does not throw", () => {
  assert.equal(smol.check, "ok");
  assert.equal(qwen.check, "ok");
  assert.equal(inline("").check,
    "probe conversation renders without \"svc probe system text\", \"svc probe first question\", " +
    "\"svc probe first answer\", \"svc probe second question\"");
  assert.equal(inline("{{ raise_exception('System role not supported') }}").check,
    "probe conversation fails to render: System role not supported");
  assert.equal(inline("{% for m in messages %}{{ m.content }}{% if m.role == 'assistant' %} (done){% endif %}{% endfor %}").check, "ok");
  assert.equal(inline("{% for m in messages %}{% if m.role != 'assistant' %}{{ m.content }}{% endif %}{% endfor %}").check,
    "probe conversation renders without \"svc probe first answer\"");
  assert.equal(inline("{% for m in messages %}{{ m.content | upper }}{% endfor %}").check,
    "probe conversation renders without \"svc probe system text\", \"svc probe first question\", " +
    "\"svc probe first answer\", \"svc probe second question\"");
});

test("start probe: a user message (or a system message and one) must render with the user's text; what it sent otherwise", () => {
  assert.equal(smol.startProblem, null);
  assert.equal(qwen.startProblem, null);
  // A self-check failure is not a start problem: a template that refuses a system message or drops an answer still starts.
  assert.equal(inline("{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}" +
    "{{ m.content }}{% endfor %}").startProblem, null);
  assert.equal(inline("{% if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}{% for m in messages %}{{ m.content }}" +
    "{% endfor %}").startProblem, null);
  assert.equal(inline("{{ raise_exception('never') }}").startProblem,
    'the start probe sent [user "svc probe question"] with add_generation_prompt, and the template failed: never; ' +
    'then [system "svc probe system text", user "svc probe question"] with add_generation_prompt, and the template failed: never');
  assert.match(inline("{% for m in messages %}{{ m.content | upper }}{% endfor %}").startProblem!,
    /^the start probe sent \[user "svc probe question"\] with add_generation_prompt, and the prompt it made lacks the user's text; then /);
  assert.match(inline("{% for m in messages %}{{ m.content.nope() }}{% endfor %}").startProblem!, /and the template failed: chat template error: /);
});

describe("reply header (where a reply starts inside a rendered assistant turn)", () => {
  test("is what the generation prompt appends; a template that appends nothing has none", () => {
    assert.equal(smol.replyHeader, "<|im_start|>assistant\n");
    assert.equal(qwen.replyHeader, "<|im_start|>assistant\n");
    assert.equal(inline("{% for m in messages %}{{ m.content }}{% endfor %}").replyHeader, null);
  });
});

test("reasoning effort reaches templates that read reasoning_effort, in the levels they know", () => {
  const t = inline("{% if reasoning_effort is defined %}effort={{ reasoning_effort }}{% else %}default{% endif %}|{{ messages[0].content }}");
  const say = (effort?: string, kwargs?: Record<string, unknown>) => t.render([{role: "user", content: "x"}], {...NO_GEN, reasoningEffort: effort, kwargs}).text;
  assert.equal(say(), "default|x");
  assert.equal(say("high"), "effort=high|x");
  assert.equal(say("minimal"), "effort=low|x");
  assert.equal(say("xhigh"), "effort=high|x");
  assert.equal(say("none"), "default|x", "none turns thinking off instead");
  assert.equal(say("high", {reasoning_effort: "medium"}), "effort=medium|x", "chat_template_kwargs wins");
  // A template that never reads it does not get it.
  assert.equal(smol.render([{role: "user", content: "x"}], {...GEN, reasoningEffort: "high"}).text.includes("high"), false);
});
