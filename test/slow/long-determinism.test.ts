// Exactness where coding agents live: prompts of about 4k, 8k and 16k tokens on the test model. Past position 240
// every generated token's row takes attention's split path alone on every thread, and a reply's rows are reused as
// decoded, one split row each (src/engine/kv/row-classes.ts, llama/decode-threads.ts). The reference is a server
// with the cache off, one request at a time; the cached server must give the same bytes cold, resumed (the same
// prompt again), batched (two long replies and a short one decoded at once), as a follow-up turn sent at once
// (the reply reused as decoded) and forked from a kept session (X-Svc-Keep, then X-Svc-From twice).
//
// 16k is past the test model's 8,192-token training length: SVC_CTX_SIZE asks for it, as a user of a long context
// would (the start warns; exactness does not depend on it). Last, a 32k context end to end: a 20k-token prompt, its
// follow-up, and a prompt past the context refused.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {startServer, type RunningServer} from "../../support/server.ts";

const LENGTHS = [4000, 8000, 16000];
const CTX = "17408";
const MAX_TOKENS = 32;

const WORDS = ("the module reads a request, checks each field against the schema, and returns an error that names the field " +
  "when a value is missing or has the wrong type; otherwise it builds the reply from the cache, the session and the model").split(" ");

/** A document of about `tokens` tokens (SmolLM2's tokenizer: about 1.84 a word here), numbered so that no two lines repeat. */
function documentOf(tokens: number): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < tokens; i++) {
    const line = `line ${i} of ${tokens}: ${WORDS.slice(i % 7, (i % 7) + 14).join(" ")} (${(i * 7919) % 10007}).`;
    lines.push(line);
    n += Math.round(line.split(" ").length * 1.84);
  }
  return lines.join("\n");
}

type Msg = {role: "user" | "assistant"; content: string};
const turn1 = (length: number): Msg[] => [{role: "user", content: `${documentOf(length)}\n\nSummarise the document above in one line.`}];
const turn2 = (length: number, reply: string): Msg[] => [...turn1(length), {role: "assistant", content: reply},
  {role: "user", content: "Which line number is the largest?"}];

interface Out {
  text: string;
  prompt: number;
  completion: number;
  cached: number;
  from: string | null;
}

async function greedy(server: RunningServer, messages: Msg[], headers: Record<string, string> = {}): Promise<Out> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json", ...headers},
    body: JSON.stringify({model: "m", messages, max_tokens: MAX_TOKENS, temperature: 0}), signal: AbortSignal.timeout(600_000)});
  const body = await res.json() as {choices: {message: {content: string}}[]; usage: {prompt_tokens: number; completion_tokens: number;
    prompt_tokens_details: {cached_tokens: number}}};
  assert.equal(res.status, 200, JSON.stringify(body));
  return {text: body.choices[0]!.message.content, prompt: body.usage.prompt_tokens, completion: body.usage.completion_tokens,
    cached: body.usage.prompt_tokens_details.cached_tokens, from: res.headers.get("x-svc-from")};
}

function same(o: Out, ref: Out, what: string): void {
  assert.equal(o.text, ref.text, what);
}

/**
 * The finest check: the follow-up prompt (the reply sent back, a new question) scored for one token, its five
 * likeliest next tokens with their log-probabilities as sent (doubles). A server that holds the reply reuses its rows
 * as decoded, so any rounding that differs in any row of the prompt or the reply shows here, where greedy text on
 * the test model's flat logits may not move.
 */
async function probe(server: RunningServer, length: number, reply: Out, headers: Record<string, string> = {}): Promise<{cached: number; top: unknown}> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json", ...headers},
    body: JSON.stringify({model: "m", messages: turn2(length, reply.text), max_tokens: 1, temperature: 0, logprobs: true, top_logprobs: 5}),
    signal: AbortSignal.timeout(600_000)});
  const body = await res.json() as {choices: {logprobs: {content: {top_logprobs: unknown}[]}}[]; usage: {prompt_tokens_details: {cached_tokens: number}}};
  assert.equal(res.status, 200, JSON.stringify(body));
  return {cached: body.usage.prompt_tokens_details.cached_tokens, top: body.choices[0]!.logprobs.content[0]!.top_logprobs};
}

describe("exact greedy output on long prompts (4k, 8k, 16k tokens)", () => {
  let cached: RunningServer;
  const ref1 = new Map<number, Out>();
  const ref2 = new Map<number, Out>();
  const refProbe = new Map<number, unknown>();
  const first = new Map<number, Out>();
  let refShort: Out;
  const SHORT: Msg[] = [{role: "user", content: "Explain tides to a child."}];

  before(async () => {
    const cold = await startServer({SVC_CTX_SIZE: CTX, SVC_PROMPT_CACHE: "0", SVC_PARALLEL: "1", SVC_SPECULATION: "off"});
    try {
      for (const length of LENGTHS) {
        ref1.set(length, await greedy(cold, turn1(length)));
        ref2.set(length, await greedy(cold, turn2(length, ref1.get(length)!.text)));
        refProbe.set(length, (await probe(cold, length, ref1.get(length)!)).top);
      }
      refShort = await greedy(cold, SHORT);
    } finally {
      await cold.stop();
    }
    cached = await startServer({SVC_CTX_SIZE: CTX, SVC_PARALLEL: "3", SVC_FORK: "1"});
  }, {timeout: 900_000});
  after(async () => {
    await cached?.stop();
  });
  /** Probes `reply` (just decoded, or kept under `headers`' session) and checks that its rows were reused and exact. */
  const probeSame = async (length: number, reply: Out, what: string, headers: Record<string, string> = {}) => {
    const p = await probe(cached, length, reply, headers);
    assert.ok(p.cached >= reply.prompt + reply.completion - 1, `${what}: the probe reused ${p.cached} of ${reply.prompt}+${reply.completion}`);
    assert.deepEqual(p.top, refProbe.get(length), `${what}: the reply's rows, probed`);
  };

  test("the prompts are as long as their names say, and the reference reused nothing", () => {
    for (const length of LENGTHS) {
      const r = ref1.get(length)!;
      assert.ok(r.prompt >= 0.9 * length && r.prompt <= 1.2 * length, `${length}: ${r.prompt} prompt tokens`);
      assert.equal(r.completion, MAX_TOKENS);
      assert.equal(r.cached + ref2.get(length)!.cached, 0);
    }
  });

  test("cold on the cached server, each reply kept as a session: the same bytes", async () => {
    for (const length of LENGTHS) {
      const o = await greedy(cached, turn1(length), {"X-Svc-Keep": `long-${length}`});
      assert.ok(o.cached < 64, `${length} is cold past the chat template's opening: reused ${o.cached}`);
      same(o, ref1.get(length)!, `${length} cold`);
      first.set(length, o);
    }
  });

  test("forked from the kept session twice, then probed from it: the follow-up starts from the kept reply, the same bytes each time", async () => {
    for (const length of LENGTHS) {
      for (const fork of [1, 2]) {
        const o = await greedy(cached, turn2(length, first.get(length)!.text), {"X-Svc-From": `long-${length}`});
        assert.equal(o.from, "used", `${length} fork ${fork}`);
        const f = first.get(length)!;
        assert.ok(o.cached >= f.prompt + f.completion - 1, `${length} fork ${fork}: reused ${o.cached} of ${f.prompt}+${f.completion}`);
        same(o, ref2.get(length)!, `${length} fork ${fork}`);
      }
      await probeSame(length, first.get(length)!, `${length} kept reply`, {"X-Svc-From": `long-${length}`});
    }
  });

  test("batched: two long replies and a short one decoded at once, resumed from the cache: the same bytes", async () => {
    // Held first (the forks above left other states in the regions), so that both resume at once and decode side by side.
    for (const length of LENGTHS.slice(0, 2)) await greedy(cached, turn1(length));
    const [a, b, short] = await Promise.all([greedy(cached, turn1(LENGTHS[0]!)), greedy(cached, turn1(LENGTHS[1]!)), greedy(cached, SHORT)]);
    assert.ok(a!.cached >= a!.prompt - 2 && b!.cached >= b!.prompt - 2, `the long prompts were resumed: ${a!.cached}, ${b!.cached}`);
    same(a!, ref1.get(LENGTHS[0]!)!, `${LENGTHS[0]} batched`);
    same(b!, ref1.get(LENGTHS[1]!)!, `${LENGTHS[1]} batched`);
    same(short!, refShort, "the short one batched");
    await probeSame(LENGTHS[0]!, a!, `${LENGTHS[0]} batched`);
    await probeSame(LENGTHS[1]!, b!, `${LENGTHS[1]} batched`);
  });

  test("resumed and followed up at once, as an agent's next turn: the reply is reused as decoded, the same bytes", async () => {
    for (const length of LENGTHS) {
      await greedy(cached, turn1(length)); // resumed or cold, as the batch above left the regions
      const o1 = await greedy(cached, turn1(length));
      assert.ok(o1.cached >= o1.prompt - 2, `${length}: the same prompt again reused ${o1.cached} of ${o1.prompt}`);
      same(o1, ref1.get(length)!, `${length} resumed`);
      await probeSame(length, o1, `${length} resumed`);
      const o2 = await greedy(cached, turn2(length, o1.text));
      assert.ok(o2.cached >= o1.prompt + o1.completion - 1, `${length}: the follow-up reused ${o2.cached} of ${o1.prompt}+${o1.completion}`);
      same(o2, ref2.get(length)!, `${length} follow-up`);
    }
  });
});

describe("a 32k context end to end", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({SVC_CTX_SIZE: "32768", SVC_PARALLEL: "1"});
  });
  after(async () => {
    await server?.stop();
  });

  test("a 20k-token prompt is answered, and its follow-up resumes after the reply", async () => {
    const o1 = await greedy(server, turn1(20000));
    assert.ok(o1.prompt >= 18000 && o1.prompt <= 24000, `${o1.prompt} prompt tokens`);
    assert.equal(o1.completion, MAX_TOKENS);
    const o2 = await greedy(server, turn2(20000, o1.text));
    assert.ok(o2.cached >= o1.prompt + o1.completion - 1, `the follow-up reused ${o2.cached} of ${o1.prompt}+${o1.completion}`);
    assert.equal(o2.completion, MAX_TOKENS);
    const health = await (await fetch(`${server.url}/health`)).json() as {context: unknown};
    assert.match(JSON.stringify(health.context), /32768/, "the context in use is 32,768 positions a region");
  });

  test("past the context, the request is refused with the limit named, and the next is served", async () => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({model: "m", messages: turn1(34000), max_tokens: 8})});
    const body = await res.json() as {error: {code: string; message: string}};
    assert.equal(res.status, 400);
    assert.equal(body.error.code, "context_length_exceeded");
    assert.match(body.error.message, /32768/);
    assert.equal((await greedy(server, [{role: "user", content: "Explain tides to a child."}])).completion, MAX_TOKENS);
  });
});
