// Exactness of a tool-heavy prompt, on the test model with a template that writes the tools into the prompt
// (test/fixtures/templates/qwen3-style.jinja, Hermes JSON lines in the system turn). A tool definition's strings are
// client text, but not places where prompts depart from each other, so the evaluation plan does not cut at each of
// them (src/templates/segments.ts, Segment.tool): the tools block is evaluated in tiled pieces like any long text.
// Greedy output must still be the reference's bytes cold, beside other requests, and in a follow-up resumed from the
// first reply, and the follow-up's next-token log probabilities must equal the reference's to the last bit (text
// alone on the test model's flat logits can miss a row computed on another kernel path).

import assert from "node:assert/strict";
import {fileURLToPath} from "node:url";
import {after, before, describe, test} from "node:test";
import {startServer, type RunningServer} from "../../support/server.ts";

const TEMPLATE = fileURLToPath(new URL("../fixtures/templates/qwen3-style.jinja", import.meta.url));

type Msg = {role: "system" | "user" | "assistant"; content: string};

/** Twelve tools with many short strings (names, descriptions, parameter names, enums): a Claude Code-like block. */
const TOOLS = Array.from({length: 12}, (_, i) => ({
  type: "function" as const,
  function: {
    name: `tool_${i}`,
    description: `Tool ${i} reads or changes file number ${i} of the project.`,
    parameters: {
      type: "object",
      properties: {
        path: {type: "string", description: "A path inside the project."},
        mode: {type: "string", enum: ["read", "write", "append"], description: "What to do."},
        lines: {type: "integer", description: "How many lines."},
      },
      required: ["path"],
    },
  },
}));

const FIRST: Msg[] = [{role: "system", content: "You are a careful coding agent."}, {role: "user", content: "Which tool opens file 3?"}];
const followUp = (reply: string): Msg[] => [...FIRST, {role: "assistant", content: reply}, {role: "user", content: "And which one writes to it?"}];

interface Out {
  text: string;
  prompt: number;
  cached: number;
}

async function greedy(server: RunningServer, messages: Msg[]): Promise<Out> {
  const r = await server.client.chat.completions.create({model: "m", messages, tools: TOOLS, max_tokens: 24, temperature: 0});
  return {text: r.choices[0]!.message.content ?? "", prompt: r.usage!.prompt_tokens, cached: r.usage!.prompt_tokens_details!.cached_tokens!};
}

/** The next token's top-5 log probabilities after `messages` (max_tokens 1 at temperature 0). */
async function nextToken(server: RunningServer, messages: Msg[]): Promise<{cached: number; top: unknown}> {
  const r = await server.client.chat.completions.create({model: "m", messages, tools: TOOLS, max_tokens: 1, temperature: 0, logprobs: true,
    top_logprobs: 5});
  return {cached: r.usage!.prompt_tokens_details!.cached_tokens!, top: r.choices[0]!.logprobs!.content![0]!.top_logprobs};
}

describe("exact greedy output on a tool-heavy prompt (tools block cut only at message edges)", () => {
  let reference: RunningServer;
  let cached: RunningServer;
  let ref1: Out;
  let ref2: Out;
  let refProbe: unknown;

  before(async () => {
    reference = await startServer({SVC_CHAT_TEMPLATE: TEMPLATE, SVC_PROMPT_CACHE: "0", SVC_PARALLEL: "1", SVC_SPECULATION: "off"});
    ref1 = await greedy(reference, FIRST);
    ref2 = await greedy(reference, followUp(ref1.text));
    refProbe = (await nextToken(reference, followUp(ref1.text))).top;
    await reference.stop();
    cached = await startServer({SVC_CHAT_TEMPLATE: TEMPLATE, SVC_PARALLEL: "4"});
  });
  after(async () => {
    await reference?.stop();
    await cached?.stop();
  });

  test("the tools are in the prompt: it is long enough for tiled pieces", () => {
    assert.ok(ref1.prompt > 600, `the prompt has ${ref1.prompt} tokens`);
    assert.equal(ref1.cached, 0);
  });

  test("cold, and beside three others: the reference's bytes", async () => {
    assert.equal((await greedy(cached, FIRST)).text, ref1.text, "alone");
    const together = await Promise.all([greedy(cached, FIRST), ...[1, 2, 3].map((i) => greedy(cached, [{role: "user", content: `Say ${i}.`}]))]);
    assert.equal(together[0]!.text, ref1.text, "beside three others");
  });

  test("the follow-up resumes from the first reply and gives the reference's bytes and next-token log probabilities", async () => {
    const first = await greedy(cached, FIRST);
    const next = await greedy(cached, followUp(first.text));
    assert.ok(next.cached >= first.prompt, `the follow-up reused ${next.cached} tokens, at least the first prompt's ${first.prompt}`);
    assert.equal(next.text, ref2.text);
    const probe = await nextToken(cached, followUp(first.text));
    assert.ok(probe.cached >= first.prompt, `the probe reused ${probe.cached} tokens`);
    assert.deepEqual(probe.top, refProbe, "top-5 log probabilities, bit for bit");
  });
});
