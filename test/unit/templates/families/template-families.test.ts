// The 70 chat templates llama.cpp ships (read from node-llama-cpp's bundle, never copied here): each renders, on
// the JS Jinja engine or on llama.cpp's own, and is detected as the family in the table. Then, for every template
// whose family has a call syntax, an assistant turn with calls (and reasoning, where the template shows it) is
// rendered by the template itself and read back by that family's reply parser: the calls, their arguments and
// the reasoning come back, and no call syntax reaches the content.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, LlamaLogLevel, type Llama} from "node-llama-cpp";
import {nativeJinja} from "../../../../src/engine/llama/internals.ts";
import {createReplyParser, type ReplyPart} from "../../../../src/pipeline/reply/index.ts";
import {callSyntaxOf} from "../../../../src/pipeline/reply-plan.ts";
import {ChatTemplate, type TemplateMessage} from "../../../../src/templates/chat-template.ts";
import {bundledTemplate, bundledTemplateNames} from "../../../fixtures/templates/bundled.ts";

/** Template file -> [family id, Jinja engine]. "generic": a template with no tool syntax svc reads (its tools are
 * taught in a system message). */
const EXPECTED: Record<string, [string, "js" | "native"]> = {
  "Apertus-8B-Instruct.jinja": ["apertus", "js"],
  "Apriel-1.6-15b-Thinker-fixed.jinja": ["apriel", "native"],
  "Bielik-11B-v3.0-Instruct.jinja": ["qwen3", "js"],
  "ByteDance-Seed-OSS.jinja": ["seed-oss", "native"],
  "Cohere2MoE.jinja": ["command-r7b", "js"],
  "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ["command-r-plus", "native"],
  "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ["command-r7b", "js"],
  "GLM-4.6.jinja": ["glm-4.6", "js"],
  "GLM-4.7-Flash.jinja": ["glm-4.7", "js"],
  "GigaChat3-10B-A1.8B.jinja": ["gigachat-3", "native"],
  "GigaChat3.1-10B-A1.8B.jinja": ["gigachat-3.1", "native"],
  "HuggingFaceTB-SmolLM3-3B.jinja": ["smollm3", "js"],
  "Kimi-K2-Instruct.jinja": ["kimi-k2", "native"],
  "Kimi-K2-Thinking.jinja": ["kimi-k2", "native"],
  "Kimi-K3.jinja": ["kimi-k3", "js"],
  "LFM2-8B-A1B.jinja": ["lfm2", "js"],
  "LFM2.5-8B-A1B.jinja": ["lfm2", "js"],
  "LFM2.5-Instruct.jinja": ["lfm2", "js"],
  "MiMo-VL.jinja": ["hermes", "js"],
  "MiniMax-M1.jinja": ["minimax-m1", "js"],
  "MiniMax-M2.jinja": ["minimax-m2", "js"],
  "MiniMax-M3.jinja": ["minimax-m3", "js"],
  "Mistral-Small-3.2-24B-Instruct-2506.jinja": ["mistral", "js"],
  "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": ["qwen3-coder", "js"],
  "NVIDIA-Nemotron-Nano-v2.jinja": ["nemotron-v2", "js"],
  "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ["hermes", "native"],
  "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ["hermes", "native"],
  "Qwen-QwQ-32B.jinja": ["qwen3", "js"],
  "Qwen-Qwen2.5-7B-Instruct.jinja": ["hermes", "js"],
  "Qwen-Qwen3-0.6B.jinja": ["qwen3", "js"],
  "Qwen3-Coder.jinja": ["qwen3-coder", "js"],
  "Qwen3.5-4B.jinja": ["qwen3-coder", "js"],
  "Reka-Edge.jinja": ["qwen3", "js"],
  "Spark2.5.jinja": ["glm-4.7", "js"],
  "StepFun3.5-Flash.jinja": ["qwen3-coder", "js"],
  "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ["deepseek-r1", "js"],
  "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ["deepseek-r1", "js"],
  "deepseek-ai-DeepSeek-V3.1.jinja": ["deepseek-v3", "js"],
  "deepseek-ai-DeepSeek-V3.2.jinja": ["deepseek-v3.2", "js"],
  "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": ["deepseek-v4", "js"],
  "deepseek-ai-DeepSeek-V4.jinja": ["deepseek-v4", "js"],
  "fireworks-ai-llama-3-firefunction-v2.jinja": ["firefunction-v2", "native"],
  "google-gemma-2-2b-it.jinja": ["generic", "js"],
  "google-gemma-4-31B-it-interleaved.jinja": ["gemma4", "js"],
  "google-gemma-4-31B-it.jinja": ["gemma4", "js"],
  "ibm-granite-granite-3.3-2B-Instruct.jinja": ["granite-3.3", "js"],
  "ibm-granite-granite-4.0.jinja": ["granite-4", "js"],
  "ibm-granite-granite-4.1.jinja": ["granite-4", "js"],
  "inclusionai-ling-3.0-flash.jinja": ["glm-4.6", "js"],
  "llama-cpp-deepseek-r1.jinja": ["deepseek-r1", "js"],
  "llama-cpp-rwkv-world.jinja": ["generic", "js"],
  "meetkai-functionary-medium-v3.1.jinja": ["functionary-v3.1", "native"],
  "meetkai-functionary-medium-v3.2.jinja": ["functionary-v3.2", "native"],
  "meta-llama-Llama-3.1-8B-Instruct.jinja": ["llama3", "js"],
  "meta-llama-Llama-3.2-3B-Instruct.jinja": ["llama3", "js"],
  "meta-llama-Llama-3.3-70B-Instruct.jinja": ["llama3", "js"],
  "microsoft-Phi-3.5-mini-instruct.jinja": ["generic", "js"],
  "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ["mistral", "js"],
  "mistralai-Mistral-Nemo-Instruct-2407.jinja": ["mistral-nemo", "js"],
  "moonshotai-Kimi-K2.jinja": ["kimi-k2", "js"],
  "muse-glimmer.jinja": ["muse-glimmer", "js"],
  "openai-gpt-oss-120b.jinja": ["gpt-oss", "js"],
  "openbmb-MiniCPM5-1B.jinja": ["minicpm5", "native"],
  "poolside-Laguna-S-2.1.jinja": ["glm-4.7", "js"],
  "poolside-Laguna-XS-2.1.jinja": ["glm-4.6", "js"],
  "poolside-Laguna-XS.2.jinja": ["glm-4.6", "js"],
  "tencent-Hy3.jinja": ["hy3", "native"],
  "unsloth-Apriel-1.5.jinja": ["apriel", "native"],
  "unsloth-mistral-Devstral-Small-2507.jinja": ["mistral", "js"],
  "upstage-Solar-Open-100B.jinja": ["solar-open", "js"],
};

/** Templates whose replies svc reads in the generic form (tools taught in a system message, calls as
 * {"tool_calls": [...]}), and why: each renders no tools at all (checked: its prompt with tools is the prompt without).
 * Every bundled template that renders tools is served by a syntax of its own. */
const GENERIC_FORM: Record<string, string> = {
  "HuggingFaceTB-SmolLM3-3B.jinja": "renders no tools",
  "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "renders no tools",
  "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "renders no tools",
  "deepseek-ai-DeepSeek-V3.1.jinja": "renders no tools",
  "google-gemma-2-2b-it.jinja": "renders no tools",
  "llama-cpp-rwkv-world.jinja": "renders no tools",
  "microsoft-Phi-3.5-mini-instruct.jinja": "renders no tools",
};

/** Self-checks that fail for a reason of the template's own (it refuses the probe conversation on purpose). */
const CHECK_EXCEPTIONS: Record<string, RegExp> = {
  "google-gemma-2-2b-it.jinja": /System role not supported/,
};

let llama: Llama;
const templates = new Map<string, ChatTemplate>();
before(async () => {
  llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
  const native = nativeJinja(llama);
  for (const name of bundledTemplateNames()) {
    templates.set(name, ChatTemplate.create(bundledTemplate(name), {bosToken: "<s>", eosToken: "</s>", origin: name, native}));
  }
});
after(async () => {
  await llama?.dispose();
});

describe("the bundled chat templates", () => {
  test("all 70 are accounted for in the table", () => {
    assert.deepEqual([...templates.keys()].sort(), Object.keys(EXPECTED).sort());
    assert.equal(templates.size, 70);
  });

  test("each renders and is detected as its family", () => {
    for (const [name, t] of templates) {
      const [family, engine] = EXPECTED[name]!;
      assert.equal(t.family.id, family, `${name}: family`);
      assert.equal(t.engine, engine, `${name}: Jinja engine`);
      const reason = CHECK_EXCEPTIONS[name];
      if (reason) assert.match(t.check, reason, name);
      else assert.equal(t.check, "ok", `${name}: self-check`);
      const text = t.render([{role: "user", content: "Hello there"}], {addGenerationPrompt: true, continueFinalMessage: false}).text;
      assert.ok(text.includes("Hello there"), `${name} renders the user message`);
    }
  });

  test("each passes the start probe, so each starts (Gemma 2's, which refuses a system message, on the user message alone)", () => {
    const stopped = [...templates].filter(([, t]) => t.startProblem !== null).map(([name, t]) => `${name}: ${t.startProblem}`);
    assert.deepEqual(stopped, []);
    assert.equal(templates.size, 70);
  });
});

describe("the templates read in the generic form", () => {
  test("are exactly the listed ones, each for its reason", () => {
    const user: TemplateMessage = {role: "user", content: "What is the weather in Paris?"};
    const render = (t: ChatTemplate, tools?: unknown[]) => t.render([user], {addGenerationPrompt: true, continueFinalMessage: false, tools}).text;
    const generic = [...templates].filter(([, t]) => callSyntaxOf(t).generic).map(([name]) => name).sort();
    assert.deepEqual(generic, Object.keys(GENERIC_FORM).sort());
    for (const name of generic) {
      const t = templates.get(name)!;
      const reason = GENERIC_FORM[name]!;
      assert.equal(reason, "renders no tools", name);
      assert.equal(render(t, TOOLS), render(t), `${name}: listed as rendering no tools, but the template shows them`);
    }
  });
});

const TOOLS = [
  {type: "function", function: {name: "get_weather", description: "Weather for a city", parameters: {type: "object",
    properties: {city: {type: "string"}, days: {type: "integer"}}, required: ["city"]}}},
  {type: "function", function: {name: "get_time", description: "Time in a zone", parameters: {type: "object",
    properties: {zone: {type: "string"}}, required: ["zone"]}}},
];
const PARSER_TOOLS = TOOLS.map((t) => ({name: t.function.name, parameters: t.function.parameters}));
const CALLS = [
  {name: "get_weather", args: {city: "Paris", days: 2}},
  {name: "get_time", args: {zone: "CET"}},
];
const REASONING = "svc reasoning text";

/** Templates that never show an earlier turn's calls: the reply is written here in the form their system text
 * teaches, and read back the same way. */
const UNRENDERED_CALLS: Record<string, string> = {
  "ibm-granite-granite-3.3-2B-Instruct.jinja": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, ' +
    '{"name": "get_time", "arguments": {"zone": "CET"}}]<|end_of_text|>',
  // Python literals as the model writes them (single quotes), which the template's own writer (LFM2.5 8B) also uses.
  "LFM2-8B-A1B.jinja": "<|tool_call_start|>[get_weather(city='Paris', days=2), get_time(zone='CET')]<|tool_call_end|><|im_end|>",
  "LFM2.5-Instruct.jinja": "<|tool_call_start|>[get_weather(city='Paris', days=2), get_time(zone='CET')]<|tool_call_end|><|im_end|>",
};

interface Read {
  reasoning: string;
  content: string;
  calls: {name: string; args: unknown; complete: boolean}[];
}

function fold(parts: ReplyPart[]): Read {
  const out: Read = {reasoning: "", content: "", calls: []};
  const args: string[] = [];
  for (const p of parts) {
    if (p.kind === "reasoning") out.reasoning += p.text;
    else if (p.kind === "content") out.content += p.text;
    else if (p.kind === "call_start") {
      out.calls[p.index] = {name: p.name, args: null, complete: false};
      args[p.index] = "";
    } else if (p.kind === "call_args") args[p.index] += p.text;
    else if (p.kind === "call_end") {
      out.calls[p.index]!.complete = p.complete;
      out.calls[p.index]!.args = JSON.parse(args[p.index]!);
    }
  }
  return out;
}

/**
 * The assistant turn as the template writes it, from where the generation prompt ends, read by the family's
 * parser in chunks of 3 characters (so every marker is split somewhere).
 */
function readBack(t: ChatTemplate, assistant: TemplateMessage, written?: string): Read | null {
  const user: TemplateMessage = {role: "user", content: "What is the weather in Paris, and the time?"};
  const prompt = t.render([user], {addGenerationPrompt: true, continueFinalMessage: false, tools: TOOLS}).text;
  let full: string;
  try {
    full = written !== undefined ? prompt + written : t.render([user, assistant], {addGenerationPrompt: false, continueFinalMessage: false, tools: TOOLS}).text;
  } catch {
    return null;
  }
  // Templates render an earlier turn unlike a fresh generation prompt in places (QwQ opens <think> in the prompt
  // but drops reasoning from past turns): the reply starts where the two renderings part.
  let at = 0;
  while (at < prompt.length && at < full.length && prompt[at] === full[at]) at++;
  // ...at a marker's start, not inside one (`<think>` and `<tool_call>` share their "<").
  if (at < prompt.length) while (at > 0 && !">]|}\n".includes(full[at - 1]!)) at--;
  if (at < prompt.lastIndexOf("What is the weather")) return null;
  const reply = full.slice(at);
  const startsInside = (family: ChatTemplate["family"]) => family.reasoning !== null && full.slice(0, at).trimEnd().endsWith(family.reasoning.open);
  const family = t.family;
  const parser = createReplyParser({
    calls: family.calls, tools: PARSER_TOOLS, layout: family.layout,
    familyCalls: family.calls,
    reasoning: family.reasoning ? {...family.reasoning, startsInside: startsInside(family)} : null,
  });
  const parts: ReplyPart[] = [];
  for (let i = 0; i < reply.length; i += 3) parts.push(...parser.push(reply.slice(i, i + 3)));
  parts.push(...parser.finish());
  return fold(parts);
}

describe("each family reads back the calls its templates write", () => {
  for (const name of Object.keys(EXPECTED)) {
    const [family] = EXPECTED[name]!;
    if (family === "generic" || family === "smollm3") continue;
    test(name, () => {
      const t = templates.get(name)!;
      const calls = t.family.parallelCalls ? CALLS : CALLS.slice(0, 1);
      const toolCalls = calls.map((c, i) => ({id: `call0000${i + 1}`, type: "function" as const, function: {name: c.name, arguments: JSON.stringify(c.args)}}));
      const read = readBack(t, {role: "assistant", content: "", reasoning_content: REASONING, tool_calls: toolCalls}, UNRENDERED_CALLS[name]);
      assert.ok(read !== null, `${name} renders an assistant turn with calls after the conversation`);
      assert.deepEqual(read.calls.map((c) => ({name: c.name, args: c.args})), calls, `${name}: calls`);
      // The reply ended with the turn's end marker, not the call's own close, for syntaxes without one.
      for (const c of read.calls) assert.equal(c.complete, true, `${name}: ${c.name} complete`);
      if (read.reasoning !== "") assert.equal(read.reasoning.trim(), REASONING, `${name}: reasoning`);
      const leaked = ["tool_call", "TOOL_CALLS", "<function", "<invoke", "arg_key", "get_weather", "\"city\"", "DSML", "TOOLCALL", "START_ACTION"]
        .filter((m) => read.content.includes(m));
      assert.deepEqual(leaked, [], `${name}: no call syntax in content ${JSON.stringify(read.content)}`);
    });
  }
});
