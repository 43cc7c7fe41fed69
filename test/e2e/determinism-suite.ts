// Greedy output is byte-identical however it was computed: a server with the cache off, run one request at
// a time, is the reference; the cached server must give the same bytes for the same prompts (20 topics in
// the full matrix) run four at a time, run again warm (resumed from the previous run's state), and as
// follow-up turns resumed after the reply. See src/engine/kv/region-memory.ts and row-classes.ts for why this
// holds. Both ways of matching reuse are held to it: by row class (the default and test models probe to it; a
// reply is reusable as decoded) and by pieces (SVC_EXACT_REUSE=pieces; replies are sealed while the engine is idle).
//
// Servers run the test model (support/test-model.ts) unless `env` names a model: its greedy replies are word salad,
// but deterministic and moved by every token of the context, and with flash attention a row's KV differs between
// a tiled piece and a row piece as SmolLM2's does, which is what these comparisons need.
//
// Three setups: flash attention on (the default), off (SVC_FLASH_ATTENTION=0), and on with prompt-lookup
// speculation forced on for the cached server (SVC_SPECULATION=on) against a reference without it; the last
// also runs prompts that copy their input, where drafts are accepted, and hangs up in the middle of drafting
// (on SmolLM2: only a trained model copies). The full matrix runs in the slow tier (test/slow/determinism.test.ts);
// the e2e tier runs the default setup on the first topics (test/e2e/determinism.test.ts), so `npm test` still
// fails when exactness breaks.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {get, reuseMatch, sealCount, sealedReplies, startServer, type RunningServer} from "../../support/server.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const SYSTEM = "You are a concise assistant. Answer in two or three sentences.";
const ALL_TOPICS = ["tides", "rainbows", "sourdough", "magnets", "glaciers", "fireflies", "compost", "echoes", "lighthouses", "coral",
  "thunder", "yeast", "kites", "moss", "comets", "bridges", "owls", "clay", "fog", "bamboo"];
const turn1 = (topic: string): Msg[] => [{role: "system", content: SYSTEM}, {role: "user", content: `Explain ${topic} to a child.`}];
const turn2 = (topic: string, reply: string): Msg[] => [...turn1(topic), {role: "assistant", content: reply}, {role: "user", content: "Why does that happen?"}];

// Answers that copy long stretches of the prompt: where prompt lookup has something to propose.
const PARAGRAPH = "The old mill stood at the edge of the village, where the river bent twice before reaching the sea. " +
  "Every morning the miller opened the heavy wooden doors, checked the stones, and listened to the water turning the great wheel.";
const LIST = "- apples, 4\n- bread, 2 loaves\n- milk, 1 litre\n- eggs, 12\n- butter, 250 g\n- rice, 1 kg\n- tomatoes, 6\n- cheese, 200 g";
const JSON_CFG = '{\n  "name": "inventory-service",\n  "version": "2.4.1",\n  "port": 3000,\n  "features": ["search", "export", "audit"]\n}';
const COPY: Msg[][] = [
  [{role: "user", content: `Copy this paragraph word for word.\n\n${PARAGRAPH}`}],
  [{role: "user", content: `Repeat this shopping list, changing the number of eggs to 6.\n\n${LIST}`}],
  [{role: "user", content: `Rewrite this JSON with "port": 3000 changed to "port": 8080. Output the whole JSON.\n\n${JSON_CFG}`}],
  // One note per topic: twenty more replies where drafts are proposed, so byte identity under speculation is
  // checked on prompts that really speculate, not only on prompts where the lookup finds nothing.
  ...ALL_TOPICS.map((t, i): Msg[] => [{role: "user", content: `Copy this note word for word.\n\nThe ${t} exhibit opens at ${7 + (i % 4)} in the ` +
    `morning and closes at ${4 + (i % 3)} in the afternoon. The guide for the ${t} room meets visitors at the ${["east", "west", "north"][i % 3]} ` +
    `door every hour, and the shop sells ${t} postcards for ${2 + (i % 5)} euros each.`}]),
];

// A prompt past 256 positions: from there a lone decode row takes llama.cpp's split attention, so the engine runs every
// such row alone on every thread (decode-threads.ts); alone and beside three others it must give the same bytes, and a
// follow-up reuses the reply's split rows as decoded (kv/row-classes.ts). test/slow/long-determinism.test.ts does the
// same at 4k, 8k and 16k tokens, with the follow-up's scores compared to the last bit.
const LONG: Msg[] = [{role: "user", content: Array.from({length: 8}, (_, d) => `Day ${d + 1}: ${PARAGRAPH} On day ${d + 1} the miller counted ` +
  `${12 + d * 7} sacks of flour and sold ${3 + d} of them at the market.`).join("\n") + "\n\nOn which day were the most sacks sold, and how many?"}];
const longFollowUp = (reply: string): Msg[] => [...LONG, {role: "assistant", content: reply}, {role: "user", content: "And on which day the fewest?"}];
// Prompts that open with the long prompt's first words: they share the start of its tiled run, but their own text is
// short enough to be evaluated row by row, so a resume from the long prompt's state must stop where the row classes
// part (kv/row-classes.ts). Resuming at the end of the shared tokens instead changed 3 of these 5 replies on the test model.
const LONG_STARTS: Msg[][] = [20, 30, 40, 50, 60].map((n) => [{role: "user", content: `${(LONG[0]!.content as string).split(" ").slice(0, n).join(" ")} What now?`}]);

interface Out {
  text: string;
  prompt: number;
  completion: number;
  cached: number;
  draft: number;
  accepted: number;
}

async function greedy(server: RunningServer, messages: Msg[], maxTokens = 32): Promise<Out> {
  const r = await server.client.chat.completions.create({model: "m", messages, max_tokens: maxTokens, temperature: 0});
  const timings = (r as unknown as {timings: {draft_n: number; draft_n_accepted: number}}).timings;
  return {text: r.choices[0]!.message.content!, prompt: r.usage!.prompt_tokens, completion: r.usage!.completion_tokens,
    cached: r.usage!.prompt_tokens_details!.cached_tokens!, draft: timings.draft_n, accepted: timings.draft_n_accepted};
}

async function metric(server: RunningServer, name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is in /metrics`);
  return Number(line.split(" ")[1]);
}

/** `topicCount`: how many of the 20 topics the plain prompts use (all of them in the full matrix). */
export function exactGreedy(label: string, env: Record<string, string>, speculation: boolean, topicCount = ALL_TOPICS.length,
  match: "rows" | "pieces" = "rows"): void {
  const TOPICS = ALL_TOPICS.slice(0, topicCount);
  describe(`exact greedy output: ${label}`, () => {
    let cold: RunningServer;
    let cached: RunningServer;
    const reference1: Out[] = [];
    const reference2: Out[] = [];
    const referenceCopy: Out[] = [];
    let referenceLong: Out;
    let referenceLong2: Out;
    const referenceStarts: Out[] = [];
    /** Every answer of the cached server, for the draft counters. */
    const seen: Out[] = [];
    const ask = async (messages: Msg[], maxTokens?: number) => {
      const o = await greedy(cached, messages, maxTokens);
      seen.push(o);
      return o;
    };
    before(async () => {
      // The reference is plain greedy: no cache, one at a time, no drafts (auto may draft where a wide step is cheap).
      cold = await startServer({...env, SVC_PROMPT_CACHE: "0", SVC_PARALLEL: "1", SVC_SPECULATION: "off"});
      for (const t of TOPICS) reference1.push(await greedy(cold, turn1(t)));
      for (const [i, t] of TOPICS.entries()) reference2.push(await greedy(cold, turn2(t, reference1[i]!.text)));
      if (speculation) for (const m of COPY) referenceCopy.push(await greedy(cold, m, 96));
      referenceLong = await greedy(cold, LONG, 48);
      referenceLong2 = await greedy(cold, longFollowUp(referenceLong.text), 48);
      for (const m of LONG_STARTS) referenceStarts.push(await greedy(cold, m));
      await cold.stop();
      cached = await startServer({...env, SVC_PARALLEL: "4", ...(speculation ? {SVC_SPECULATION: "on"} : {})});
    });
    after(async () => {
      await cold?.stop();
      await cached?.stop();
    });

    test("the reference reuses nothing and drafts nothing", () => {
      assert.ok([...reference1, ...reference2, ...referenceCopy].every((o) => o.cached === 0 && o.draft === 0 && o.accepted === 0));
    });

    test(`reuse is matched by ${match}, as this setup expects`, async () => {
      assert.equal(await reuseMatch(cached), match);
    });

    test(`four at a time on the cached server: the same bytes for all ${TOPICS.length} prompts`, async () => {
      const out: Out[] = [];
      for (let i = 0; i < TOPICS.length; i += 4) out.push(...(await Promise.all(TOPICS.slice(i, i + 4).map((t) => ask(turn1(t))))));
      TOPICS.forEach((t, i) => assert.equal(out[i]!.text, reference1[i]!.text, `"${t}" batched`));
      assert.ok(out.some((o) => o.cached > 0), "the shared system message was reused along the way");
    });

    test("again, warm (resumed from the states the first run left): the same bytes", async () => {
      let reused = 0;
      for (const [i, t] of TOPICS.entries()) {
        const o = await ask(turn1(t));
        assert.equal(o.text, reference1[i]!.text, `"${t}" warm`);
        reused += o.cached;
      }
      assert.ok(reused > 0);
    });

    if (match === "pieces") {
      test("follow-up turns resumed after the sealed reply (sealed while idle, as between a person's turns): the same bytes", async () => {
        for (const [i, t] of TOPICS.entries()) {
          const before = await sealCount(cached);
          const first = await ask(turn1(t));
          await sealedReplies(cached, before + 1);
          const second = await ask(turn2(t, first.text));
          assert.ok(second.cached >= first.prompt + first.completion, `"${t}": turn 2 reused ${second.cached} of ${first.prompt}+${first.completion}`);
          assert.equal(second.text, reference2[i]!.text, `"${t}" turn 2`);
        }
      });
    }

    test(`follow-up turns sent at once (an agent's next turn): ${match === "rows" ? "the reply is reused as decoded" : "the prompt is reused"}, the same bytes`, async () => {
      const sealsBefore = await sealCount(cached);
      for (const [i, t] of TOPICS.entries()) {
        const first = await ask(turn1(t));
        const second = await ask(turn2(t, first.text));
        // Matched by rows, every reply token the model evaluated is reused (the last one sampled never was).
        const least = match === "rows" ? first.prompt + first.completion - 1 : first.prompt;
        assert.ok(second.cached >= least, `"${t}": turn 2 reused ${second.cached} of ${first.prompt}+${first.completion}`);
        assert.equal(second.text, reference2[i]!.text, `"${t}" turn 2 at once`);
      }
      if (match === "rows") assert.equal(await sealCount(cached), sealsBefore, "matched by rows, no reply is re-evaluated");
    });

    test("a prompt past 256 positions: the same bytes alone and beside three others, and its follow-up", async () => {
      const alone = await ask(LONG, 48);
      assert.ok(alone.prompt > 300, `the long prompt has ${alone.prompt} tokens`);
      assert.equal(alone.text, referenceLong.text, "alone");
      const together = await Promise.all([ask(LONG, 48), ...TOPICS.slice(0, 3).map((t) => ask(turn1(t), 48))]);
      assert.equal(together[0]!.text, referenceLong.text, "beside three others");
      const next = await ask(longFollowUp(together[0]!.text), 48);
      const least = match === "rows" ? alone.prompt + alone.completion - 1 : alone.prompt;
      assert.ok(next.cached >= least, `the follow-up reused ${next.cached} of ${alone.prompt}+${alone.completion}`);
      assert.equal(next.text, referenceLong2.text, "the follow-up, sent at once");
    });

    test("prompts that share only the start of the long prompt's tiled run, each right after it: the same bytes", async () => {
      for (const [i, m] of LONG_STARTS.entries()) {
        await ask(LONG, 48);
        const o = await ask(m);
        assert.ok(o.cached > 0, `start ${i} resumed from a kept state`);
        assert.equal(o.text, referenceStarts[i]!.text, `start ${i}`);
      }
    });

    if (!speculation) return;

    test("23 answers that copy the prompt: drafts are accepted, and the bytes are the reference's, alone and four at a time", async () => {
      const alone: Out[] = [];
      for (const m of COPY) alone.push(await ask(m, 96));
      const together: Out[] = [];
      for (let i = 0; i < COPY.length; i += 4) together.push(...(await Promise.all(COPY.slice(i, i + 4).map((m) => ask(m, 96)))));
      for (const [i, o] of [...alone, ...together].entries()) assert.equal(o.text, referenceCopy[i % COPY.length]!.text, `copy prompt ${i % COPY.length}`);
      for (const o of alone) assert.ok(o.accepted <= o.draft, `accepted ${o.accepted} of ${o.draft}`);
      const speculated = alone.filter((o) => o.accepted > 0).length;
      assert.ok(speculated >= 20, `replies with accepted drafts: ${speculated} of ${COPY.length}`);
    });

    test("timings add up in /metrics, and /health says speculation is on", async () => {
      assert.ok(seen.some((o) => o.draft > 0 && o.accepted < o.draft), "some drafts were refuted too");
      assert.equal(await metric(cached, "svc:draft_tokens_total"), seen.reduce((n, o) => n + o.draft, 0));
      assert.equal(await metric(cached, "svc:draft_tokens_accepted_total"), seen.reduce((n, o) => n + o.accepted, 0));
      const health = (await get(`${cached.url}/health`)).body;
      assert.equal(health.engine.flash_attention, true);
      assert.equal(health.engine.speculation.mode, "on");
      assert.equal(health.engine.speculation.active, true);
      assert.ok(health.engine.speculation.step_cost > 0);
    });

    test("hang-ups in the middle of drafting leave no busy region and no stray draft in the state", async () => {
      for (let i = 0; i < 6; i++) {
        const controller = new AbortController();
        const stream = await cached.client.chat.completions.create({model: "m", messages: COPY[i % COPY.length]!, max_tokens: 96, temperature: 0, stream: true},
          {signal: controller.signal});
        let chunks = 0;
        try {
          for await (const _ of stream) if (++chunks === 8 + i) controller.abort();
        } catch (err) {
          assert.ok(controller.signal.aborted, `only our abort ends the stream: ${String(err)}`);
        }
      }
      let busy = -1;
      for (let t = 0; t < 100 && busy !== 0; t++) {
        busy = (await get(`${cached.url}/health`)).body.engine.busy_regions;
        if (busy !== 0) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(busy, 0);
      // The regions the hang-ups left are reused by the same prompts: a draft left in a state would change these bytes.
      for (const [i, m] of COPY.slice(0, 6).entries()) {
        const o = await ask(m, 96);
        assert.ok(o.cached > 0, `copy prompt ${i} resumed from a region the hang-ups left`);
        assert.equal(o.text, referenceCopy[i]!.text, `copy prompt ${i} after the hang-ups`);
      }
    });
  });
}

