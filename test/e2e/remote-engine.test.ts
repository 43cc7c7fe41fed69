// The remote engine (SVC_ENGINE) in front of two real llama-server replicas built from the llama.cpp source
// node-llama-cpp bundles, on the test model's GGUF (support/test-model.ts; one test on SmolLM2's, and says why): the
// four dialects through the official clients, structured output and strict tools across the grammar restarts,
// held-back UTF-8 tokens, prefix routing and its reports, named sessions pinned to their replica (slot files loaded
// back), and the refusals at start (unreachable replica, another template) and mid-stream (a replica dies).

import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import {fileURLToPath} from "node:url";
import {after, before, describe, test} from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type {Server} from "../../support/llama-server/servers.ts";
import {get, post, serverArgs, startServer, trainedModel, type RunningServer} from "../../support/server.ts";
import {freePort, REPLICA_CTX, REPLICA_SLOTS, startReplicas} from "../../support/llama-replicas.ts";
import {testModelPath} from "../../support/test-model.ts";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../src/models/known-files.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

let replicas: Server[] = [];
let server: RunningServer;
let client: OpenAI;
/** The GGUF every replica of this file serves (and every svc server here reads): the test model's. */
let model: string;
const urls = () => replicas.map((r) => r.url);

before(async () => {
  model = await testModelPath();
  replicas = await startReplicas(2, [], true, model);
  server = await startServer({SVC_ENGINE: urls().join(","), SVC_CTX_SIZE: String(REPLICA_CTX)});
  client = server.client;
});
after(async () => {
  await server?.stop();
  for (const r of replicas) await r.stop();
});

type Route = {replica: string; expected_cached: number; reason: string};
const routeOf = (body: unknown): Route => (body as {timings: {route: Route}}).timings.route;
const ask = (content: string, system?: string) => [...(system ? [{role: "system" as const, content: system}] : []), {role: "user" as const, content}];

describe("remote engine: dialects through the official clients", () => {
  test("/health describes the replicas, what is not promised across them, and the regions are their slots", async () => {
    const h = (await get(`${server.url}/health`)).body;
    assert.equal(h.status, "ok");
    assert.equal(h.engine.regions, 2 * REPLICA_SLOTS);
    assert.equal(h.engine.context_size, REPLICA_CTX);
    assert.equal(h.engine.remote.kind, "llama-server");
    assert.equal(h.engine.remote.routing, "prefix");
    assert.deepEqual(h.engine.remote.replicas.map((r: {url: string; up: boolean; slots: number}) => [r.url, r.up, r.slots]), urls().map((u) => [u, true, REPLICA_SLOTS]));
    assert.match(h.prompt_cache.greedy_output, /not promised byte-identical across replicas/);
    assert.ok(h.engine.remote.limits.some((l: string) => /grammar change inside a reply/.test(l)));
    const listening = server.logs.find((l) => /listening on /.test(l)) ?? "";
    assert.match(listening, / replicas=2 /, "the start line counts replicas");
    assert.doesNotMatch(listening, /threads=|uv_threadpool=/, "no local decode threads to report");
  });

  test("chat: greedy reply equals llama-server's own on the same tokens; usage and the routing decision are reported", async () => {
    const messages = ask("What is the capital of France?");
    const res = await client.chat.completions.create({model: "m", messages, max_tokens: 24, temperature: 0});
    const text = res.choices[0]!.message.content!;
    assert.ok(text.length > 0);
    const route = routeOf(res);
    assert.ok(urls().includes(route.replica), `served by a replica: ${route.replica}`);
    // The same prompt tokens, straight to a replica's /completion.
    const rendered = (await post(`${server.url}/apply-template`, {messages})).body.prompt as string;
    const tokens = (await post(`${server.url}/tokenize`, {content: rendered, add_special: true, parse_special: true})).body.tokens as number[];
    const direct = (await post(`${replicas[1]!.url}/completion`, {prompt: tokens, n_predict: 24, temperature: 0})).body;
    assert.equal(text, direct.content);
    assert.equal(res.usage!.completion_tokens, direct.tokens_predicted);
    assert.equal(res.usage!.prompt_tokens, tokens.length);
  });

  test("chat streamed through the SDK's stream helper equals the plain reply", async () => {
    const messages = ask("Name three colours.");
    const plain = await client.chat.completions.create({model: "m", messages, max_tokens: 30, temperature: 0});
    const stream = client.chat.completions.stream({model: "m", messages, max_tokens: 30, temperature: 0, stream_options: {include_usage: true}});
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, plain.choices[0]!.message.content);
    assert.equal(final.usage!.completion_tokens, plain.usage!.completion_tokens);
  });

  // Trained model: only a trained model writes emoji after a prompt of emoji (the test model writes words, digits and
  // JSON punctuation), so this test has a SmolLM2 replica and server of its own.
  test("tokens llama-server holds back inside a UTF-8 character are recovered: text and token count equal its own", async () => {
    const [replica] = await startReplicas(1, [], true, DEFAULT_MAIN_MODEL_SPEC);
    const smol = await startServer(trainedModel({SVC_ENGINE: replica!.url, SVC_CTX_SIZE: String(REPLICA_CTX)}));
    try {
      const prompt = "Rocket emoji: 🚀, fire emoji: 🔥, Tokyo in Japanese: 東京. Now more emoji:";
      const res = (await post(`${smol.url}/v1/completions`, {prompt, max_tokens: 24, temperature: 0})).body;
      const direct = (await post(`${replica!.url}/completion`, {prompt, n_predict: 24, temperature: 0, return_tokens: true})).body;
      assert.ok(/\p{Extended_Pictographic}/u.test(direct.content), `the reply has an emoji, so some token was held back: ${direct.content}`);
      assert.equal(res.choices[0].text, direct.content);
      assert.equal(res.usage.completion_tokens, direct.tokens.length);
    } finally {
      await smol.stop();
      await replica!.stop();
    }
  });

  test("responses and messages (Anthropic SDK, streamed with its helper) answer through the replicas", async () => {
    const r = await client.responses.create({model: "m", input: "Say hello.", max_output_tokens: 20, temperature: 0});
    assert.ok(r.output_text.length > 0);
    const anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0});
    const stream = anthropic.messages.stream({model: "m", max_tokens: 20, messages: [{role: "user", content: "Say hello."}], temperature: 0});
    const msg = await stream.finalMessage();
    assert.equal(msg.content[0]!.type, "text");
    assert.ok((msg.content[0] as {text: string}).text.length > 0);
    assert.ok(msg.usage.output_tokens >= 1);
  });

  // The test model's strings run on until the grammar closes them: svc's own engine closes them in time to fit the
  // token budget, llama-server does not, so every string in these schemas has a maxLength.
  const SHORT = {type: "string", maxLength: 24} as const;

  test("a JSON schema is enforced remotely (chat and messages)", async () => {
    const schema = {type: "object", properties: {name: SHORT, age: {type: "integer"}}, required: ["name", "age"], additionalProperties: false};
    const res = await client.chat.completions.create({model: "m", messages: ask("Give me a person as JSON"), max_tokens: 60, temperature: 0,
      response_format: {type: "json_schema", json_schema: {name: "p", strict: true, schema}}});
    const value = JSON.parse(res.choices[0]!.message.content!);
    assert.deepEqual(Object.keys(value).sort(), ["age", "name"]);
    assert.equal(typeof value.name, "string");
    assert.ok(Number.isInteger(value.age));
    const anthropic = new Anthropic({baseURL: server.url, apiKey: "x", maxRetries: 0});
    const msg = await anthropic.messages.create({model: "m", max_tokens: 40, messages: [{role: "user", content: "Give a JSON object with a field color."}],
      output_config: {format: {type: "json_schema", schema: {type: "object", properties: {color: SHORT}, required: ["color"], additionalProperties: false}}}} as never);
    const text = (msg as {content: {text: string}[]}).content[0]!.text;
    assert.equal(typeof JSON.parse(text).color, "string");
  });

  test("a schema beside tools binds from the first \"{\": the remote restart regenerates the brace already sent and the JSON is whole", async () => {
    const res = await client.chat.completions.create({model: "m", max_tokens: 80, temperature: 0,
      messages: ask('{"name": "Paris", "country": "France"} -- reply with another city in exactly this JSON format.'),
      tools: [{type: "function", function: {name: "get_weather", strict: true, parameters: {type: "object", properties: {city: SHORT},
        required: ["city"], additionalProperties: false}}}],
      response_format: {type: "json_schema", json_schema: {name: "p", strict: true, schema: {type: "object", properties: {name: SHORT,
        country: SHORT}, required: ["name", "country"], additionalProperties: false}}}});
    const content = res.choices[0]!.message.content!;
    assert.ok(content.startsWith("{"), `the reply is the JSON from its brace: ${content}`);
    const value = JSON.parse(content);
    assert.deepEqual(Object.keys(value).sort(), ["country", "name"]);
  });

  test("strict tools: every call names the tool and its arguments match the schema (grammar hand-overs restart the remote request)", async () => {
    const parameters = {type: "object", properties: {city: SHORT, unit: {type: "string", enum: ["c", "f"]}}, required: ["city", "unit"],
      additionalProperties: false};
    const res = await client.chat.completions.create({model: "m", messages: ask("What is the weather in Paris?"), max_tokens: 80, temperature: 0,
      tools: [{type: "function", function: {name: "get_weather", strict: true, parameters}}], tool_choice: "required"});
    const calls = res.choices[0]!.message.tool_calls!;
    assert.ok(calls.length >= 1);
    for (const call of calls) {
      assert.equal(call.type === "function" && call.function.name, "get_weather");
      const args = JSON.parse((call as {function: {arguments: string}}).function.arguments);
      assert.deepEqual(Object.keys(args).sort(), ["city", "unit"]);
      assert.ok(["c", "f"].includes(args.unit));
    }
  });
});

describe("remote engine: prefix routing", () => {
  test("a conversation's next turn goes to the replica that holds it and is served from its cache; /cache and /metrics report it", async () => {
    const system = "You are a terse assistant for a hardware shop. ".repeat(12);
    const first = await post(`${server.url}/v1/chat/completions`, {messages: ask("Do you sell hammers?", system), max_tokens: 16, temperature: 0});
    const firstRoute = routeOf(first.body);
    const history = [...ask("Do you sell hammers?", system), {role: "assistant", content: first.body.choices[0].message.content}, {role: "user", content: "And nails?"}];
    const second = await post(`${server.url}/v1/chat/completions`, {messages: history, max_tokens: 16, temperature: 0});
    const route = routeOf(second.body);
    assert.equal(route.replica, firstRoute.replica);
    assert.equal(route.reason, "prefix");
    assert.ok(route.expected_cached > first.body.usage.prompt_tokens - 2, `expected ${route.expected_cached} of the first prompt's ${first.body.usage.prompt_tokens}`);
    assert.ok(second.body.usage.prompt_tokens_details.cached_tokens >= first.body.usage.prompt_tokens - 2, "the replica reported the prefix cached");
    const cache = (await get(`${server.url}/cache`)).body;
    const held = cache.replicas.find((r: {url: string}) => r.url === route.replica);
    assert.ok(held.routed.prefix >= 1 && held.hits >= 1 && held.cached_tokens > 0 && held.prefix_tokens > 0);
    assert.ok(held.hit_rate > 0 && held.hit_rate <= 1);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`svc:replica_cached_tokens_total\\{replica="${route.replica.replace(/[.]/g, "\\.")}"\\} [1-9]`));
    assert.match(metrics, /svc:replica_up\{replica="[^"]+"\} 1/);
    const line = server.logs.find((l) => l.includes(second.body.id));
    assert.match(line ?? "", new RegExp(`replica=${route.replica} expected_cached=\\d+ route_reason=prefix`));
  });
});

describe("remote engine: named sessions (SVC_FORK=1) pinned to their replica", () => {
  type Msg = {role: "system" | "user" | "assistant"; content: string};
  const SYSTEM = "You are a museum guide who answers in one or two short sentences.";
  async function chat(own: RunningServer, messages: Msg[], headers: Record<string, string> = {}) {
    const res = await fetch(`${own.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json", ...headers},
      body: JSON.stringify({messages, max_tokens: 16, temperature: 0})});
    const body = await res.json() as any;
    assert.equal(res.status, 200, JSON.stringify(body));
    return {headers: res.headers, body};
  }
  const followUp = (messages: Msg[], r: {body: any}, question: string): Msg[] =>
    [...messages, {role: "assistant", content: r.body.choices[0].message.content}, {role: "user", content: question}];
  /** What a follow-up can reuse of a finished request on a replica: its prompt and reply, less a last token cut by the budget (never fed back). */
  const keptEnd = (r: {body: any}) => r.body.usage.prompt_tokens + r.body.usage.completion_tokens - (r.body.choices[0].finish_reason === "length" ? 1 : 0);
  const cached = (r: {body: any}) => r.body.usage.prompt_tokens_details.cached_tokens as number;
  const logLine = async (own: RunningServer, id: string) => {
    for (let i = 0; i < 200 && !own.logs.some((l) => l.includes(`request id=${id} `)); i++) await new Promise((r) => setTimeout(r, 25));
    return own.logs.find((l) => l.includes(`request id=${id} `)) ?? "";
  };
  /** Two unrelated conversations at once, after the keep was written: they take both slots, the session's among them. */
  async function overwriteSlots(own: RunningServer, name: string): Promise<void> {
    await own.waitForLog(new RegExp(`session handle kept name=${name} `));
    await Promise.all(["List three prime numbers.", "Spell the word cat backwards."].map((q) => chat(own, [{role: "system", content: `Answer briefly. ${q}`},
      {role: "user", content: q}])));
  }

  test("a slot another request took is loaded back from the replica's slot file: the follow-up goes to the session's replica and reuses the kept reply", async () => {
    const own = await startServer({SVC_ENGINE: replicas[0]!.url, SVC_CTX_SIZE: String(REPLICA_CTX), SVC_FORK: "1"});
    try {
      const m1: Msg[] = [{role: "system", content: SYSTEM}, {role: "user", content: "Why are old paintings varnished?"}];
      const r1 = await chat(own, m1, {"X-Svc-Keep": "guide"});
      assert.equal(r1.headers.get("x-svc-keep"), "accepted");
      await overwriteSlots(own, "guide");
      const r2 = await chat(own, followUp(m1, r1, "Does it turn yellow?"), {"X-Svc-From": "guide"});
      assert.equal(r2.headers.get("x-svc-from"), "used");
      assert.deepEqual(routeOf(r2.body), {replica: replicas[0]!.url, expected_cached: routeOf(r2.body).expected_cached, reason: "session"});
      assert.ok(cached(r2) >= keptEnd(r1), `the replica reused ${cached(r2)} tokens; the kept request had ${keptEnd(r1)}`);
      assert.match(await logLine(own, r2.body.id), /cache=handle:\d+ /, `the state came from the slot file, not the slot:\n${own.logs.filter((l) => / request id=/.test(l)).join("\n")}`);
      const listed = (await get(`${own.url}/svc/handles`)).body.data as {name: string; tokens: number}[];
      assert.equal(listed.find((h) => h.name === "guide")?.tokens, keptEnd(r1), "the kept state is what the replica saved");
    } finally {
      await own.stop();
    }
  });

  test("a replica without --slot-save-path: the session holds while its slot does, and a reused slot is said, not hidden", async () => {
    // Without its RAM prompt cache too (--cache-ram 0), which could otherwise bring the old prompt back into the slot on its own.
    const [plain] = await startReplicas(1, ["--cache-ram", "0"], false, model);
    const own = await startServer({SVC_ENGINE: plain!.url, SVC_CTX_SIZE: String(REPLICA_CTX), SVC_FORK: "1"});
    try {
      const m1: Msg[] = [{role: "system", content: SYSTEM}, {role: "user", content: "What is a fresco?"}];
      const r1 = await chat(own, m1, {"X-Svc-Keep": "fresco"});
      await own.waitForLog(/engine replica does not save slots \(start it with --slot-save-path\)/);
      const r2 = await chat(own, followUp(m1, r1, "Where can I see one?"), {"X-Svc-From": "fresco"});
      assert.equal(r2.headers.get("x-svc-from"), "used");
      assert.equal(routeOf(r2.body).reason, "session");
      assert.ok(cached(r2) >= keptEnd(r1), `reused ${cached(r2)} of ${keptEnd(r1)} while the slot still holds the session`);
      assert.match(await logLine(own, r2.body.id), /cache=memory:\d+ /);
      await overwriteSlots(own, "fresco");
      const r3 = await chat(own, followUp(m1, r1, "Is it painted on wet plaster?"), {"X-Svc-From": "fresco"});
      assert.equal(routeOf(r3.body).reason, "session");
      assert.ok(cached(r3) < r1.body.usage.prompt_tokens, `the slot was reused: only ${cached(r3)} tokens could be reused`);
      assert.match(await logLine(own, r3.body.id), /cache=[^ ]*session_slot_reused /);
    } finally {
      await own.stop();
      await plain!.stop();
    }
  });
});

describe("remote engine: refusals", () => {
  function start(env: Record<string, string>) {
    return spawnSync(process.execPath, serverArgs(), {cwd: ROOT, env: {...process.env, SVC_PORT: "0", SVC_MODEL: model, ...env}, encoding: "utf8",
      timeout: 120_000});
  }

  test("an unreachable replica URL stops the start with a line naming it", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const r = start({SVC_ENGINE: `${replicas[0]!.url},${dead}`});
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`SVC_ENGINE: ${dead.replace(/[.]/g, "\\.")} cannot be reached`));
  });

  test("a malformed SVC_ENGINE is refused by the settings check", () => {
    const r = start({SVC_ENGINE: "ftp://x,"});
    assert.equal(r.status, 2);
    assert.match(r.stderr, /SVC_ENGINE="ftp:\/\/x,": must be a comma-separated list of distinct http:\/\/ or https:\/\//);
  });

  test("a replica with another chat template is refused at start, naming it", async () => {
    const [other] = await startReplicas(1, ["--chat-template", "chatml"], true, model);
    try {
      const r = start({SVC_ENGINE: `${replicas[0]!.url},${other!.url}`});
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`${other!.url.replace(/[.]/g, "\\.")} has another chat template`));
    } finally {
      await other!.stop();
    }
  });

  test("a replica that dies mid-stream ends that stream with an error event; the next request goes to the other", async () => {
    const [doomed] = await startReplicas(1, [], true, model);
    // Round-robin makes the replica of each request known in advance: the first goes to replicas[0], the second to the doomed one.
    const own = await startServer({SVC_ENGINE: `${replicas[0]!.url},${doomed!.url}`, SVC_CTX_SIZE: String(REPLICA_CTX), SVC_ROUTING: "round-robin"});
    try {
      const messages = ask("Write a long story about a lighthouse keeper.");
      const warm = await post(`${own.url}/v1/chat/completions`, {messages, max_tokens: 4, temperature: 0});
      assert.equal(routeOf(warm.body).replica, replicas[0]!.url);
      assert.equal(routeOf(warm.body).reason, "round_robin");
      const res = await fetch(`${own.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({messages, max_tokens: 1500, temperature: 0, stream: true})});
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const first = await reader.read();
      assert.ok(first.value && first.value.length > 0);
      const health = (await get(`${own.url}/health`)).body;
      const busy = health.engine.remote.replicas.find((r: {url: string; busy: number}) => r.busy > 0);
      assert.equal(busy?.url, doomed!.url, "the stream runs on the replica that will die");
      doomed!.child.kill("SIGKILL");
      let rest = new TextDecoder().decode(first.value);
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        rest += new TextDecoder().decode(chunk.value);
      }
      assert.match(rest, /"error":\{[^}]*"message":"[^"]+"/, `an error event ends the stream: ${rest.slice(-300)}`);
      const next = await post(`${own.url}/v1/chat/completions`, {messages, max_tokens: 8, temperature: 0});
      assert.equal(next.status, 200);
      assert.equal(routeOf(next.body).replica, replicas[0]!.url);
      const after = (await get(`${own.url}/health`)).body.engine.remote.replicas;
      assert.deepEqual(after.map((r: {url: string; up: boolean}) => [r.url, r.up]), [[replicas[0]!.url, true], [doomed!.url, false]]);
    } finally {
      await own.stop();
      await doomed!.stop();
    }
  });
});
