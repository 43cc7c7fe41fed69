// Greedy output is byte-identical however it was computed: a server with the cache off, run one request at
// a time, is the reference; the cached server must give the same bytes for the same 20 prompts run four at
// a time, run again warm (resumed from the previous run's state), and as follow-up turns resumed after a
// sealed reply. See src/engine/kv/region-memory.ts for why this holds.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {startServer, type RunningServer} from "./harness.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const SYSTEM = "You are a concise assistant. Answer in two or three sentences.";
const TOPICS = ["tides", "rainbows", "sourdough", "magnets", "glaciers", "fireflies", "compost", "echoes", "lighthouses", "coral",
  "thunder", "yeast", "kites", "moss", "comets", "bridges", "owls", "clay", "fog", "bamboo"];
const turn1 = (topic: string): Msg[] => [{role: "system", content: SYSTEM}, {role: "user", content: `Explain ${topic} to a child.`}];
const turn2 = (topic: string, reply: string): Msg[] => [...turn1(topic), {role: "assistant", content: reply}, {role: "user", content: "Why does that happen?"}];

interface Out {
  text: string;
  prompt: number;
  completion: number;
  cached: number;
}

async function greedy(server: RunningServer, messages: Msg[]): Promise<Out> {
  const r = await server.client.chat.completions.create({model: "m", messages, max_tokens: 32, temperature: 0});
  return {text: r.choices[0]!.message.content!, prompt: r.usage!.prompt_tokens, completion: r.usage!.completion_tokens,
    cached: r.usage!.prompt_tokens_details!.cached_tokens!};
}

describe("exact greedy output", () => {
  let cold: RunningServer;
  let cached: RunningServer;
  const reference1: Out[] = [];
  const reference2: Out[] = [];
  before(async () => {
    cold = await startServer({SVC_PROMPT_CACHE: "0", SVC_PARALLEL: "1"});
    for (const t of TOPICS) reference1.push(await greedy(cold, turn1(t)));
    for (const [i, t] of TOPICS.entries()) reference2.push(await greedy(cold, turn2(t, reference1[i]!.text)));
    await cold.stop();
    cached = await startServer({SVC_PARALLEL: "4"});
  });
  after(async () => {
    await cold?.stop();
    await cached?.stop();
  });

  test("the reference reuses nothing", () => {
    assert.ok([...reference1, ...reference2].every((o) => o.cached === 0));
  });

  test("four at a time on the cached server: the same bytes for all 20 prompts", async () => {
    const out: Out[] = [];
    for (let i = 0; i < TOPICS.length; i += 4) out.push(...(await Promise.all(TOPICS.slice(i, i + 4).map((t) => greedy(cached, turn1(t))))));
    TOPICS.forEach((t, i) => assert.equal(out[i]!.text, reference1[i]!.text, `"${t}" batched`));
    assert.ok(out.some((o) => o.cached > 0), "the shared system message was reused along the way");
  });

  test("again, warm (resumed from the states the first run left): the same bytes", async () => {
    let reused = 0;
    for (const [i, t] of TOPICS.entries()) {
      const o = await greedy(cached, turn1(t));
      assert.equal(o.text, reference1[i]!.text, `"${t}" warm`);
      reused += o.cached;
    }
    assert.ok(reused > 0);
  });

  test("follow-up turns resumed after the sealed reply: the same bytes", async () => {
    for (const [i, t] of TOPICS.entries()) {
      const first = await greedy(cached, turn1(t));
      const second = await greedy(cached, turn2(t, first.text));
      assert.ok(second.cached >= first.prompt + first.completion, `"${t}": turn 2 reused ${second.cached} of ${first.prompt}+${first.completion}`);
      assert.equal(second.text, reference2[i]!.text, `"${t}" turn 2`);
    }
  });
});
