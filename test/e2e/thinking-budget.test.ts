// The thinking budget (Messages-style `thinking.budget_tokens`) on a scripted model whose template opens the
// reasoning block in the prompt: the model writes six reasoning tokens, then closes the block and answers.
// With a budget of 3 the server closes the block itself after three tokens; the model, which writes its
// next token from the current one, goes on after the closing marker exactly as if it had written it.

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type {MessageCreateParamsNonStreaming, TextBlock, ThinkingBlock} from "@anthropic-ai/sdk/resources/messages";
import {buildScenario} from "../fixtures/scripted-model/build.ts";
import {startServer, type RunningServer} from "../../support/server.ts";

// ChatML whose generation prompt opens the reasoning block (as some thinking templates do); it names
// enable_thinking so the server treats it as a thinking template.
const TEMPLATE = `{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
<think>
{% endif %}{#- enable_thinking is not read: the block is always open -#}`;

let dir: string;
let server: RunningServer;
let anthropic: Anthropic;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-thinking-budget-"));
  const scenario = await buildScenario(dir, "budget", {chatTemplate: TEMPLATE, promptTail: "<|im_start|>assistant\n<think>\n",
    reply: [" a b c d e f", "</think>", "Done.", "<|im_end|>"]});
  server = await startServer({SVC_MODEL: scenario.path, SVC_PARALLEL: "1"});
  anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0});
});
after(async () => {
  await server?.stop();
  if (dir) await rm(dir, {recursive: true, force: true});
});

const ask = (thinking: MessageCreateParamsNonStreaming["thinking"]): MessageCreateParamsNonStreaming =>
  ({model: "m", max_tokens: 40, temperature: 0, thinking, messages: [{role: "user", content: "Think, then answer."}]}) as MessageCreateParamsNonStreaming;

describe("thinking budget", () => {
  test("without a budget the model's own reasoning comes back whole", async () => {
    const res = await anthropic.messages.create(ask({type: "adaptive"}));
    assert.equal((res.content[0] as ThinkingBlock).thinking, " a b c d e f");
    assert.equal((res.content[1] as TextBlock).text, "Done.");
  });

  test("budget_tokens 3: the block is closed after three reasoning tokens, the answer follows; streamed the same", async () => {
    const res = await anthropic.messages.create(ask({type: "enabled", budget_tokens: 3}));
    assert.deepEqual(res.content.map((b) => b.type), ["thinking", "text"]);
    assert.equal((res.content[0] as ThinkingBlock).thinking, " a b", "two reasoning tokens kept; the third was replaced by the closing marker");
    assert.equal((res.content[1] as TextBlock).text, "Done.");
    assert.equal(res.stop_reason, "end_turn");
    const streamed = await anthropic.messages.stream(ask({type: "enabled", budget_tokens: 3})).finalMessage();
    assert.deepEqual(streamed.content, res.content);
  });

  test("a budget of max_tokens or more is refused, naming the field", async () => {
    const err = await anthropic.messages.create(ask({type: "enabled", budget_tokens: 40})).catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.BadRequestError);
    assert.match(err.message, /budget_tokens/);
  });
});
