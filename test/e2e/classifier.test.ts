// The single-token classifier pattern through the openai client: a three-label sentiment classification over
// 20 items sharing a system message, the model's own probabilities, cache reuse from the second item on, cold
// vs warm agreement (on the trained default model: the labels must be among its likely next tokens and mean
// something), and the tokenization rule, completions logprobs, sampled logprobs and every refusal of rule 7
// (on the test model).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import OpenAI from "openai";
import {post, startServer, trainedModel, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";

/** The trained model's server (the 20 items and their cold repeats); the test model's for the rest. */
let trained: RunningServer;
let server: RunningServer;

before(async () => {
  server = await sharedServer({SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1"});
});
after(async () => {
  await server?.stop();
});

const SYSTEM = [
  "You are a careful sentiment classifier for short product and film reviews.",
  "Read the review and answer with exactly one word: positive, negative or neutral.",
  "Positive means the reviewer liked the thing and would recommend it to a friend.",
  "Negative means the reviewer disliked the thing, regrets it, or warns others away.",
  "Neutral means the review is mixed, factual, or shows no clear feeling either way.",
].join(" ");
const LABELS = [" positive", " negative", " neutral"];
const ITEMS = [
  "I loved this film, it was wonderful.", "Terrible service, I will never come back.", "The package arrived on Tuesday.",
  "Best purchase I have made all year!", "It broke after two days. Awful.", "The manual has twelve pages.",
  "Absolutely delightful, my kids adore it.", "Boring plot and wooden acting.", "It is blue and weighs two kilos.",
  "Fantastic value, highly recommended.", "Worst meal I have ever eaten.", "The store opens at nine.",
  "A joy from start to finish.", "Disappointing and overpriced.", "The box contains one cable.",
  "Brilliant, I would buy it again.", "Rude staff and a dirty room.", "The film is ninety minutes long.",
  "Wonderful colours and great sound.", "Cheap plastic that cracked at once.",
];

function classify(review: string) {
  return {
    model: "m",
    messages: [
      {role: "system" as const, content: SYSTEM},
      {role: "user" as const, content: `Review: ${review}`},
      {role: "assistant" as const, content: "Sentiment:"},
    ],
    continue_final_message: true,
    add_generation_prompt: false,
    chat_template_kwargs: {enable_thinking: false},
    max_tokens: 1,
    temperature: 0,
    logprobs: true,
    top_logprobs: 20,
  };
}

interface Scored {
  probs: Record<string, number>;
  order: string[];
  cached: number;
  raw: OpenAI.Chat.Completions.ChatCompletion;
}

async function score(review: string): Promise<Scored> {
  const raw = await trained.client.chat.completions.create(classify(review) as never) as OpenAI.Chat.Completions.ChatCompletion;
  const top = raw.choices[0]!.logprobs!.content![0]!.top_logprobs;
  // Rule 2: normalise over the labels. A label outside the top 20 has no reported mass and counts as 0
  // (a 135M model sometimes ranks one label that low); at least one label must be there.
  const mass: Record<string, number> = {};
  for (const label of LABELS) {
    const entry = top.find((t) => t.token === label);
    mass[label] = entry ? Math.exp(entry.logprob) : 0;
  }
  const total = Object.values(mass).reduce((a, b) => a + b, 0);
  assert.ok(total > 0, `some label is among the top 20 for ${JSON.stringify(review)}`);
  const probs = Object.fromEntries(LABELS.map((l) => [l, mass[l]! / total]));
  return {probs, order: [...LABELS].sort((a, b) => probs[b]! - probs[a]!), cached: raw.usage!.prompt_tokens_details!.cached_tokens!, raw};
}

describe("classifier pattern", () => {
  test("the labels start with different tokens (rule 3)", async () => {
    const first = await Promise.all(LABELS.map(async (l) => (await post(`${server.url}/tokenize`, {content: l})).body.tokens[0]));
    assert.equal(new Set(first).size, 3);
  });
});

describe("classifier pattern on the trained model", () => {
  before(async () => {
    // One region: every item lands where the previous one left its state.
    // Trained model: the labels must be among its likely next tokens, and a clearly positive review must read positive.
    trained = await startServer(trainedModel({SVC_PARALLEL: "1"}));
  });
  after(async () => {
    await trained?.stop();
  });

  let warm: Scored[] = [];

  test("20 items: one token scored, labels sum to 1, cached tokens from the second item on", async () => {
    warm = [];
    for (const item of ITEMS) warm.push(await score(item));
    for (const [i, s] of warm.entries()) {
      const choice = s.raw.choices[0]!;
      assert.equal(s.raw.usage!.completion_tokens, 1);
      assert.equal(choice.finish_reason, "length");
      const sum = Object.values(s.probs).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 1e-12, `normalised label probabilities sum to 1 (item ${i})`);
      const lp = choice.logprobs!.content![0]!;
      assert.equal(lp.top_logprobs.length, 20);
      const values = lp.top_logprobs.map((t) => t.logprob);
      assert.deepEqual(values, [...values].sort((a, b) => b - a), "most likely first");
      assert.ok(values.every((v) => v <= 0));
      assert.ok(lp.top_logprobs.reduce((a, t) => a + Math.exp(t.logprob), 0) <= 1 + 1e-9, "the model's own distribution: the top 20 hold at most all of it");
      assert.equal(lp.logprob, values[0], "greedy: the chosen token is the most likely one");
      assert.equal(lp.token, choice.message.content);
      if (i === 0) assert.equal(s.cached, 0, "the first item is cold");
      else assert.ok(s.cached >= 64, `item ${i} reuses the shared system message (cached ${s.cached})`);
    }
    assert.equal(warm[0]!.order[0], " positive", "a clearly positive review reads positive");
    assert.ok(warm.some((s) => s.order[0] === " negative"), "some review reads negative");
  });

  test("bytes are the UTF-8 bytes of each token", () => {
    for (const s of warm) {
      const lp = s.raw.choices[0]!.logprobs!.content![0]!;
      for (const t of [lp, ...lp.top_logprobs]) assert.deepEqual(t.bytes, [...Buffer.from(t.token, "utf8")], `bytes of ${JSON.stringify(t.token)}`);
    }
  });

  test("cold requests give the same labels and the same probabilities to 4 decimals", async () => {
    for (const [i, item] of ITEMS.entries()) {
      // An unrelated request takes the only region, so the item after it starts cold.
      await post(`${trained.url}/v1/completions`, {prompt: `Unrelated text number ${i}.`, max_tokens: 1});
      const cold = await score(item);
      assert.equal(cold.cached, 0, `item ${i} ran cold`);
      assert.deepEqual(cold.order, warm[i]!.order, `label order of item ${i}`);
      for (const l of LABELS) {
        assert.ok(Math.abs(cold.probs[l]! - warm[i]!.probs[l]!) < 5e-5, `item ${i} ${l}: cold ${cold.probs[l]} vs warm ${warm[i]!.probs[l]}`);
      }
    }
  });
});

describe("logprobs and rule 7 on the test model", () => {
  test("completions take logprobs as a number of alternatives", async () => {
    const prompt = "<|im_start|>user\nIs the sky blue? Answer yes or no.<|im_end|>\n<|im_start|>assistant\n";
    const res = await server.client.completions.create({model: "m", prompt, max_tokens: 1, temperature: 0, logprobs: 5});
    const lp = res.choices[0]!.logprobs!;
    assert.equal(lp.tokens!.length, 1);
    assert.equal(lp.tokens![0], res.choices[0]!.text);
    const top = lp.top_logprobs![0]!;
    assert.equal(Object.keys(top).length, 5);
    assert.equal(lp.token_logprobs![0], Math.max(...Object.values(top)));
    assert.deepEqual(lp.text_offset, [0]);
  });

  test("sampled generation with logprobs scores every token; the seed repeats it", async () => {
    const body = {model: "m", messages: [{role: "user" as const, content: "Name a fruit."}], max_tokens: 12, temperature: 0.8, seed: 99, logprobs: true};
    const a = await server.client.chat.completions.create(body);
    const b = await server.client.chat.completions.create(body);
    const content = a.choices[0]!.logprobs!.content!;
    assert.equal(content.length, a.usage!.completion_tokens);
    assert.equal(content.map((c) => c.token).join(""), a.choices[0]!.message.content);
    assert.ok(content.every((c) => c.logprob <= 0 && c.top_logprobs.length === 0));
    assert.deepEqual(b.choices[0]!.logprobs, a.choices[0]!.logprobs);
  });

  describe("rule 7 refusals, each a 400 saying which rule", () => {
    const refuse = async (over: object, message: RegExp) => {
      const res = await post(`${server.url}/v1/chat/completions`, {...classify(ITEMS[0]!), ...over});
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error.message, message);
    };
    test("with stream", () => refuse({stream: true}, /^logprobs: log probabilities are returned on non-streamed requests only/));
    test("n above 1", () => refuse({n: 2}, /^n: only one choice/));
    test("with response_format", () => refuse({response_format: {type: "json_object"}}, /^logprobs: log probabilities cannot be combined with response_format/));
    test("top_logprobs with max_tokens above 1", () => refuse({max_tokens: 2}, /^top_logprobs: alternatives are for scoring one token; send max_tokens: 1/));
    test("logprobs at temperature 0 with max_tokens above 1", () => refuse({top_logprobs: undefined, max_tokens: 4}, /^logprobs: at temperature 0 log probabilities are for scoring one token/));
    test("top_logprobs above 20", () => refuse({top_logprobs: 21}, /^top_logprobs: at most 20 alternatives per token/));
    test("the SDK sees a BadRequestError", async () => {
      await assert.rejects(server.client.chat.completions.create({...classify(ITEMS[0]!), top_logprobs: 21} as never), OpenAI.BadRequestError);
    });
  });
});
