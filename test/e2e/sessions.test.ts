// Named sessions (SVC_FORK=1) on the test model: every row of the spec's state table over HTTP — keep, keep
// again, from (used / unmatched / unknown), joins, the handle limit, bad names, DELETE (now and while in use),
// the TTL — plus branching inside a kept reply, the headers being ignored with sessions off, and a live handle
// surviving a restart on a persistent SVC_CACHE_DIR.

import assert from "node:assert/strict";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, beforeEach, describe, test} from "node:test";
import {get, reusableEnd, reuseMatch, startServer, type RunningServer} from "../../support/server.ts";

type Msg = {role: "system" | "user" | "assistant"; content: string};
interface ChatBody {
  id: string;
  choices: {message: {content: string | null}; finish_reason: string}[];
  usage: {prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: {cached_tokens?: number}};
}
interface Reply {status: number; headers: Headers; body: any}
interface Listing {name: string; tokens: number; bytes: number; last_used: string; expires_in_s: number; in_use: boolean}

const SYSTEM = "You are a helpful assistant who answers in one or two short sentences.";

async function chat(server: RunningServer, messages: Msg[], headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<Reply> {
  const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json", ...headers},
    body: JSON.stringify({messages, max_tokens: 16, temperature: 0, ...extra})});
  const text = await res.text();
  return {status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined};
}

const text = (r: Reply) => (r.body as ChatBody).choices[0]!.message.content ?? "";
const usage = (r: Reply) => (r.body as ChatBody).usage;
const cached = (r: Reply) => usage(r).prompt_tokens_details?.cached_tokens ?? 0;
const finish = (r: Reply) => (r.body as ChatBody).choices[0]!.finish_reason;
const ok = (r: Reply) => assert.equal(r.status, 200, JSON.stringify(r.body));
/** The kept messages, the kept reply as an assistant message, then a new question: the history repeats. */
const followUp = (messages: Msg[], r: Reply, question: string): Msg[] => [...messages, {role: "assistant", content: text(r)}, {role: "user", content: question}];
const ask = (question: string): Msg[] => [{role: "system", content: SYSTEM}, {role: "user", content: question}];
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function handles(server: RunningServer): Promise<{enabled: boolean; max: number | null; data: Listing[]}> {
  const r = await get(`${server.url}/svc/handles`);
  assert.equal(r.status, 200);
  return r.body;
}
const names = async (server: RunningServer) => (await handles(server)).data.map((h) => h.name);
const del = (server: RunningServer, name: string) => fetch(`${server.url}/svc/handles/${encodeURIComponent(name)}`, {method: "DELETE"})
  .then(async (res) => ({status: res.status, body: await res.json() as any}));

/** Log lines matching re; waits (generously, not as an assertion on speed) until there are at least n. */
async function logLines(server: RunningServer, re: RegExp, n = 1, ms = 90_000): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = server.logs.filter((l) => re.test(l));
    if (found.length >= n) return found;
    if (Date.now() > deadline) throw new Error(`expected ${n} log lines matching ${re}; last lines:\n${server.logs.slice(-15).join("\n")}`);
    await sleep(20);
  }
}
/** The keep of `name` has been written (the registry logs it): the n-th kept/replaced line for that name. */
const keptLog = (server: RunningServer, name: string, n = 1) =>
  logLines(server, new RegExp(`session handle (?:kept|replaced) name=${escape(name)} `), n);
/** The request log line of one response. */
const requestLog = (server: RunningServer, r: Reply) => logLines(server, new RegExp(`svc info request id=${escape((r.body as ChatBody).id)} `)).then((l) => l[0]!);

describe("named sessions (SVC_FORK=1, 2 handles, 3 s TTL)", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({SVC_FORK: "1", SVC_FORK_HANDLES: "2", SVC_FORK_TTL_S: "3", SVC_PARALLEL: "2"});
  });
  after(async () => {
    await server?.stop();
  });
  // Each test starts with no live handle (every test waits for its own keeps to be written).
  beforeEach(async () => {
    for (const name of await names(server)) await del(server, name);
  });

  test("a kept handle is listed as soon as its reply is answered (no wait for the keep's log line)", async () => {
    for (const [i, name] of ["listed-1", "listed-2"].entries()) {
      const r = await chat(server, ask(`Name a colour, take ${i}.`), {"X-Svc-Keep": name});
      ok(r);
      assert.equal(r.headers.get("x-svc-keep"), "accepted");
      // Straight after the reply: the listing waits for keeps of answered replies, so the name is there.
      assert.ok((await names(server)).includes(name), `${name} is listed right after its reply`);
    }
  });

  test("keep, then from with the kept history repeated: accepted, listed, used, resumes after the kept reply", async () => {
    const m1 = ask("What is a compass for?");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "conv-1"});
    ok(r1);
    assert.equal(r1.headers.get("x-svc-keep"), "accepted");
    assert.equal(r1.headers.get("x-svc-from"), null, "no From asked, no From answered");
    await keptLog(server, "conv-1");
    const list = await handles(server);
    assert.equal(list.enabled, true);
    assert.equal(list.max, 2);
    const h = list.data.find((x) => x.name === "conv-1");
    assert.ok(h, `conv-1 is listed: ${JSON.stringify(list)}`);
    assert.ok(h.tokens >= usage(r1).prompt_tokens, `the kept state (${h.tokens} tokens) holds at least the prompt`);
    assert.ok(h.bytes > 0);
    assert.equal(h.in_use, false);
    assert.ok(h.expires_in_s >= 0 && h.expires_in_s <= 3, `expires_in_s ${h.expires_in_s}`);
    assert.ok(!Number.isNaN(Date.parse(h.last_used)));

    const r2 = await chat(server, followUp(m1, r1, "How do I hold it?"), {"X-Svc-From": "conv-1"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "used");
    assert.equal(r2.headers.get("x-svc-keep"), null, "no Keep asked, no Keep answered");
    const need = reusableEnd(await reuseMatch(server), usage(r1).prompt_tokens, usage(r1).completion_tokens, finish(r1) === "length");
    assert.ok(cached(r2) >= need, `reused ${cached(r2)} tokens; the kept request had ${usage(r1).prompt_tokens} prompt + ${usage(r1).completion_tokens} reply`);
    assert.deepEqual(await names(server), ["conv-1"], "from does not change the kept state");
  });

  test("keep again under a live name replaces the state with the new reply's end state", async () => {
    const m1 = ask("Name a planet with rings.");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "conv-2"});
    ok(r1);
    await keptLog(server, "conv-2");
    const first = (await handles(server)).data.find((x) => x.name === "conv-2")!;
    const m2 = followUp(m1, r1, "How far away is it?");
    const r2 = await chat(server, m2, {"X-Svc-Keep": "conv-2"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-keep"), "accepted");
    await logLines(server, /session handle replaced name=conv-2 /);
    const second = (await handles(server)).data.find((x) => x.name === "conv-2")!;
    assert.ok(second.tokens > first.tokens, `the replaced state is the longer conversation: ${first.tokens} → ${second.tokens}`);
    assert.ok(second.tokens >= usage(r2).prompt_tokens);

    const r3 = await chat(server, followUp(m2, r2, "Is it bigger than Earth?"), {"X-Svc-From": "conv-2"});
    ok(r3);
    assert.equal(r3.headers.get("x-svc-from"), "used");
    assert.ok(cached(r3) >= reusableEnd(await reuseMatch(server), usage(r2).prompt_tokens, usage(r2).completion_tokens, finish(r2) === "length"),
      `reused ${cached(r3)}; the second kept request had ${usage(r2).prompt_tokens} + ${usage(r2).completion_tokens}`);
    // Repeating only the first kept history no longer matches: the state was replaced.
    const r4 = await chat(server, followUp(m1, r1, "What colour is it?"), {"X-Svc-From": "conv-2"});
    ok(r4);
    assert.equal(r4.headers.get("x-svc-from"), "unmatched");
  });

  test("from a live name whose history the request does not repeat: unmatched, answered as ordinary", async () => {
    const m1 = ask("Why do cats purr?");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "conv-3"});
    ok(r1);
    await keptLog(server, "conv-3");
    const other = ask("What is the capital of France?");
    const r2 = await chat(server, other, {"X-Svc-From": "conv-3"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "unmatched");
    assert.ok(text(r2).length > 0);
    // The same system message but another question: a shared prefix is not the kept history either.
    const r3 = await chat(server, [...m1.slice(0, 1), {role: "user", content: "Why do dogs bark?"}], {"X-Svc-From": "conv-3"});
    assert.equal(r3.headers.get("x-svc-from"), "unmatched");
    assert.deepEqual(await names(server), ["conv-3"], "the handle is still live");
    const plain = await chat(server, other);
    ok(plain);
    assert.equal(text(r2), text(plain), "greedy: the unmatched request answered exactly as an ordinary one");
  });

  test("from a name that is not live: unknown, answered as ordinary; nothing is created", async () => {
    const m = ask("What is a rainbow?");
    const r = await chat(server, m, {"X-Svc-From": "never-kept"});
    ok(r);
    assert.equal(r.headers.get("x-svc-from"), "unknown");
    assert.equal(r.headers.get("x-svc-keep"), null);
    const plain = await chat(server, m);
    assert.equal(text(r), text(plain), "greedy: the same reply as without the header");
    // 128 characters is a valid name (the limit), just not a live one.
    const long = await chat(server, m, {"X-Svc-From": "n".repeat(128)}, {max_tokens: 2});
    ok(long);
    assert.equal(long.headers.get("x-svc-from"), "unknown");
    assert.deepEqual(await names(server), []);
  });

  test("both headers join: continue from one name and keep under another", async () => {
    const m1 = ask("What do bees make?");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "join-a"});
    ok(r1);
    await keptLog(server, "join-a");
    const a = (await handles(server)).data.find((x) => x.name === "join-a")!;
    const m2 = followUp(m1, r1, "How do they make it?");
    const r2 = await chat(server, m2, {"X-Svc-From": "join-a", "X-Svc-Keep": "join-b"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "used");
    assert.equal(r2.headers.get("x-svc-keep"), "accepted");
    const match = await reuseMatch(server);
    assert.ok(cached(r2) >= reusableEnd(match, usage(r1).prompt_tokens, usage(r1).completion_tokens, finish(r1) === "length"));
    await keptLog(server, "join-b");
    const list = (await handles(server)).data;
    assert.deepEqual(list.map((h) => h.name), ["join-a", "join-b"]);
    assert.equal(list[0]!.tokens, a.tokens, "the name continued from is unchanged");
    assert.ok(list[1]!.tokens > a.tokens, "the new name holds the longer conversation");
    const r3 = await chat(server, followUp(m2, r2, "Is it healthy?"), {"X-Svc-From": "join-b"});
    ok(r3);
    assert.equal(r3.headers.get("x-svc-from"), "used");
    assert.ok(cached(r3) >= reusableEnd(match, usage(r2).prompt_tokens, usage(r2).completion_tokens, finish(r2) === "length"),
      `reused ${cached(r3)}; the joined request had ${usage(r2).prompt_tokens} + ${usage(r2).completion_tokens}`);
  });

  test("a new name beyond SVC_FORK_HANDLES is answered normally with X-Svc-Keep: full; a live name is still accepted", async () => {
    const m1 = ask("Name a fruit that is yellow.");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "full-a"});
    ok(r1);
    await keptLog(server, "full-a");
    const r2 = await chat(server, followUp(m1, r1, "Is it sweet?"), {"X-Svc-From": "full-a", "X-Svc-Keep": "full-b"});
    assert.equal(r2.headers.get("x-svc-keep"), "accepted");
    await keptLog(server, "full-b");
    assert.deepEqual(await names(server), ["full-a", "full-b"]);
    // Two names live. Sent together (so neither can expire in between): a third, new name is not kept but the
    // request is answered; a live name is replaced, not counted again.
    const third = chat(server, followUp(m1, r1, "Where does it grow?"), {"X-Svc-From": "full-a", "X-Svc-Keep": "full-c"});
    const r4 = await chat(server, ask("Name a fruit that is red."), {"X-Svc-From": "full-a", "X-Svc-Keep": "full-b"}, {max_tokens: 4});
    ok(r4);
    assert.equal(r4.headers.get("x-svc-keep"), "accepted");
    assert.equal(r4.headers.get("x-svc-from"), "unmatched", "an unrelated prompt does not repeat full-a's history");
    await keptLog(server, "full-b", 2);
    assert.deepEqual(await names(server), ["full-a", "full-b"]);
    const r3 = await third;
    ok(r3);
    assert.equal(r3.headers.get("x-svc-keep"), "full");
    assert.equal(r3.headers.get("x-svc-from"), "used", "the from half of the request still works");
    assert.ok(text(r3).length > 0 && usage(r3).completion_tokens > 0);
    await logLines(server, /session handle not kept: every handle is in use \(SVC_FORK_HANDLES\) name=full-c/);
  });

  test("bad names are a 400 naming the header; nothing is kept", async () => {
    const m = ask("Say hi.");
    const bad: [string, string][] = [
      ["X-Svc-Keep", ""], ["X-Svc-Keep", "k".repeat(129)], ["X-Svc-Keep", "has space"], ["X-Svc-Keep", "a/b"], ["X-Svc-Keep", "-x"],
      ["X-Svc-Keep", "."], ["X-Svc-Keep", "quote\"d"], ["X-Svc-From", ""], ["X-Svc-From", "f".repeat(129)], ["X-Svc-From", "two words"],
      ["X-Svc-From", "semi;colon"],
    ];
    for (const [header, value] of bad) {
      const r = await chat(server, m, {[header]: value}, {max_tokens: 2});
      assert.equal(r.status, 400, `${header}: ${JSON.stringify(value)} → ${r.status}`);
      assert.equal(r.body.error.param, header, JSON.stringify(r.body));
      assert.match(r.body.error.message, new RegExp(`^${header}: `), r.body.error.message);
      assert.match(r.body.error.message, /1 to 128 characters/);
    }
    // A good keep with a bad from is still a 400 (and keeps nothing).
    const both = await chat(server, m, {"X-Svc-Keep": "fine-name", "X-Svc-From": "not fine"}, {max_tokens: 2});
    assert.equal(both.status, 400);
    assert.equal(both.body.error.param, "X-Svc-From");
    // A repeated header arrives joined with ", ": the message says to send it once.
    const h = new Headers({"content-type": "application/json"});
    h.append("X-Svc-Keep", "one");
    h.append("X-Svc-Keep", "two");
    const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: h, body: JSON.stringify({messages: m, max_tokens: 2})});
    assert.equal(res.status, 400);
    const body = (await res.json()) as any;
    assert.equal(body.error.param, "X-Svc-Keep");
    assert.match(body.error.message, /sent once/);
    assert.deepEqual(await names(server), []);
    // DELETE checks the name by the same rule.
    const d = await del(server, "bad name");
    assert.equal(d.status, 400);
    assert.equal(d.body.error.param, "name");
  });

  test("DELETE releases a live handle; then from says unknown and a second DELETE is 404", async () => {
    const m1 = ask("What is rain?");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "del-a"});
    ok(r1);
    await keptLog(server, "del-a");
    const d = await del(server, "del-a");
    assert.equal(d.status, 200);
    assert.deepEqual(d.body, {name: "del-a", released: true, pending: false});
    assert.deepEqual(await names(server), []);
    const r2 = await chat(server, followUp(m1, r1, "Where does it come from?"), {"X-Svc-From": "del-a"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "unknown");
    const again = await del(server, "del-a");
    assert.equal(again.status, 404);
    assert.match(again.body.error.message, /del-a/);
    assert.equal((await del(server, "never-was")).status, 404);
  });

  test("deleting a handle in use answers pending: true and releases it after the request (its keep is not written back)", async () => {
    const m1 = ask("Count from one to three.");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "busy-a"});
    ok(r1);
    await keptLog(server, "busy-a");
    // A long streamed reply continuing from busy-a and keeping it again.
    const m2 = followUp(m1, r1, "Now count from 1 to 200, numbers only, separated by commas.");
    const res = await fetch(`${server.url}/v1/chat/completions`, {method: "POST",
      headers: {"content-type": "application/json", "X-Svc-From": "busy-a", "X-Svc-Keep": "busy-a"},
      body: JSON.stringify({messages: m2, max_tokens: 400, temperature: 0, stream: true})});
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-svc-from"), "used");
    assert.equal(res.headers.get("x-svc-keep"), "accepted");
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.equal(first.done, false, "the stream has started");
    const during = (await handles(server)).data.find((x) => x.name === "busy-a");
    assert.equal(during?.in_use, true, `listed as in use mid-request: ${JSON.stringify(during)}`);
    const d = await del(server, "busy-a");
    assert.equal(d.status, 200);
    assert.deepEqual(d.body, {name: "busy-a", released: true, pending: true});
    assert.deepEqual(await names(server), [], "hidden at once");
    let rest = new TextDecoder().decode(first.value);
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      rest += new TextDecoder().decode(chunk.value);
    }
    assert.match(rest, /data: \[DONE\]/);
    await logLines(server, /session handle not kept: released (?:or never reserved|while its state was written) name=busy-a/);
    assert.deepEqual(await names(server), [], "the request's keep did not bring it back");
    const r3 = await chat(server, m1, {"X-Svc-From": "busy-a"}, {max_tokens: 2});
    assert.equal(r3.headers.get("x-svc-from"), "unknown");
    assert.equal((await del(server, "busy-a")).status, 404);
  });

  test("branching inside a kept reply (continue_final_message) starts from the kept state", async () => {
    const m1 = ask("Describe the sea in a few words.");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "branch-a"}, {max_tokens: 24});
    ok(r1);
    await keptLog(server, "branch-a");
    const reply = text(r1);
    assert.ok(reply.length >= 8, `a reply to cut in half: ${JSON.stringify(reply)}`);
    const half = reply.slice(0, Math.floor(reply.length / 2));
    const r2 = await chat(server, [...m1, {role: "assistant", content: half}], {"X-Svc-From": "branch-a"},
      {max_tokens: 8, continue_final_message: true, add_generation_prompt: false});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "used");
    assert.ok(cached(r2) >= usage(r1).prompt_tokens, `reused ${cached(r2)}; the kept request's prompt had ${usage(r1).prompt_tokens} tokens`);
    assert.ok(usage(r2).prompt_tokens > usage(r1).prompt_tokens, "the branch's prompt holds part of the reply");
  });

  test("a handle unused for SVC_FORK_TTL_S is released: no longer listed, and from says unknown", async () => {
    const m1 = ask("What is snow?");
    const r1 = await chat(server, m1, {"X-Svc-Keep": "ttl-a"}, {max_tokens: 8});
    ok(r1);
    await keptLog(server, "ttl-a");
    assert.deepEqual(await names(server), ["ttl-a"]);
    await sleep(4500);
    assert.deepEqual(await names(server), [], "released after 3 s unused");
    await logLines(server, /session handle released: unused past SVC_FORK_TTL_S name=ttl-a/);
    const r2 = await chat(server, followUp(m1, r1, "Is it cold?"), {"X-Svc-From": "ttl-a"}, {max_tokens: 2});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "unknown");
    assert.equal((await del(server, "ttl-a")).status, 404);
  });
});

describe("a template whose reply header is not how it renders the answered turn (Qwen3 with thinking off)", () => {
  // The generation prompt opens the reply with an empty think block that the template leaves out when it renders
  // the answered turn in the history: a follow-up repeats the kept history up to the last message, not the header
  // after it. It must still start from the kept state (it resumes what it shares), not be answered as unmatched.
  let server: RunningServer;
  before(async () => {
    server = await startServer({SVC_FORK: "1", SVC_PARALLEL: "1", SVC_CHAT_TEMPLATE: "test/fixtures/templates/qwen3-style.jinja"});
  });
  after(async () => {
    await server?.stop();
  });

  test("the follow-up of a kept reply is used, and resumes past the kept history", async () => {
    const off = {chat_template_kwargs: {enable_thinking: false}};
    const first = await chat(server, ask("Name a colour."), {"X-Svc-Keep": "qwen-off"}, off);
    ok(first);
    assert.equal(first.headers.get("x-svc-keep"), "accepted");
    const applied = await (await fetch(`${server.url}/apply-template`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({messages: followUp(ask("Name a colour."), first, "Another one?"), ...off})})).json() as {prompt: string};
    assert.ok(!applied.prompt.includes("<think>\n\n</think>\n\n" + text(first)), "the history leaves the empty think block out");
    const second = await chat(server, followUp(ask("Name a colour."), first, "Another one?"), {"X-Svc-From": "qwen-off"}, off);
    ok(second);
    assert.equal(second.headers.get("x-svc-from"), "used");
    // The kept history: the first prompt up to its last message's text (what precedes "<|im_end|>\n").
    const history = await (await fetch(`${server.url}/apply-template`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({messages: ask("Name a colour."), add_generation_prompt: false, ...off})})).json() as {prompt: string};
    const tokens = await (await fetch(`${server.url}/tokenize`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({content: history.prompt, parse_special: true})})).json() as {tokens: number[]};
    const historyEnd = tokens.tokens.length - 2;
    assert.ok(usage(first).prompt_tokens > historyEnd + 2, "the kept prompt goes on past the history (the reply header)");
    assert.ok(cached(second) >= historyEnd, `cached ${cached(second)}, the kept history ends at ${historyEnd}`);
  });
});

describe("named sessions off (no SVC_FORK)", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({SVC_FORK: "0", SVC_PARALLEL: "1"});
  });
  after(async () => {
    await server?.stop();
  });

  test("the headers are ignored (even malformed ones), GET /svc/handles says enabled: false, DELETE is 404", async () => {
    const m = ask("What is a cloud?");
    const r = await chat(server, m, {"X-Svc-Keep": "off-a", "X-Svc-From": "off-a"}, {max_tokens: 4});
    ok(r);
    assert.equal(r.headers.get("x-svc-from"), null);
    assert.equal(r.headers.get("x-svc-keep"), null);
    const bad = await chat(server, m, {"X-Svc-Keep": "not a name"}, {max_tokens: 4});
    ok(bad);
    assert.equal(bad.headers.get("x-svc-keep"), null);
    assert.equal(text(bad), text(r), "answered as an ordinary request");
    const list = await handles(server);
    assert.deepEqual(list, {object: "list", enabled: false, max: null, data: []});
    const d = await del(server, "off-a");
    assert.equal(d.status, 404);
    assert.match(d.body.error.message, /SVC_FORK=1/);
  });
});

describe("named sessions on a persistent SVC_CACHE_DIR", () => {
  let dir: string;
  const servers: RunningServer[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-sessions-e2e-"));
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await rm(dir, {recursive: true, force: true});
  });

  test("a live handle survives a restart: listed, and from it the request resumes from the loaded state", async () => {
    const first = await startServer({SVC_FORK: "1", SVC_CACHE_DIR: dir, SVC_PARALLEL: "1"});
    servers.push(first);
    const m1 = ask("What is a lighthouse for?");
    const r1 = await chat(first, m1, {"X-Svc-Keep": "persist-1"});
    ok(r1);
    assert.equal(r1.headers.get("x-svc-keep"), "accepted");
    await keptLog(first, "persist-1");
    const before = (await handles(first)).data.find((h) => h.name === "persist-1")!;
    await first.stop();

    const second = await startServer({SVC_FORK: "1", SVC_CACHE_DIR: dir, SVC_PARALLEL: "1"});
    servers.push(second);
    await logLines(second, /session handles restored count=1 /);
    const list = await handles(second);
    assert.equal(list.enabled, true);
    const h = list.data.find((x) => x.name === "persist-1");
    assert.ok(h, `persist-1 is listed after the restart: ${JSON.stringify(list)}`);
    assert.equal(h.tokens, before.tokens);
    assert.equal(h.bytes, before.bytes);
    const r2 = await chat(second, followUp(m1, r1, "Are they still used?"), {"X-Svc-From": "persist-1"});
    ok(r2);
    assert.equal(r2.headers.get("x-svc-from"), "used");
    assert.ok(cached(r2) >= usage(r1).prompt_tokens, `reused ${cached(r2)}; the kept prompt had ${usage(r1).prompt_tokens} tokens`);
    assert.ok(cached(r2) >= reusableEnd(await reuseMatch(second), usage(r1).prompt_tokens, usage(r1).completion_tokens, finish(r1) === "length"),
      "the kept reply was reused too");
    const line = await requestLog(second, r2);
    assert.match(line, new RegExp(`cache=handle:${cached(r2)}\\b`), line);
  });

  test("a keep answered \"accepted\" survives a SIGTERM sent the moment the reply ends: shutdown waits for it", async () => {
    const own = await mkdtemp(join(tmpdir(), "svc-sessions-e2e-term-"));
    let second: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      const first = await startServer({SVC_FORK: "1", SVC_CACHE_DIR: own, SVC_PARALLEL: "1"});
      servers.push(first);
      const m1 = ask("What is a harbour for?");
      const r1 = await chat(first, m1, {"X-Svc-Keep": "term-1"});
      ok(r1);
      assert.equal(r1.headers.get("x-svc-keep"), "accepted");
      // No wait for the keep's log line: the signal goes out as soon as the client has its reply.
      await first.stop();
      second = await startServer({SVC_FORK: "1", SVC_CACHE_DIR: own, SVC_PARALLEL: "1"});
      servers.push(second);
      const h = (await handles(second)).data.find((x) => x.name === "term-1");
      assert.ok(h, "term-1 is listed after the restart");
      const r2 = await chat(second, followUp(m1, r1, "Are they busy?"), {"X-Svc-From": "term-1"});
      ok(r2);
      assert.equal(r2.headers.get("x-svc-from"), "used");
    } finally {
      // The server writes its handles under the folder (a use refreshes one): it stops before the folder goes, or
      // the removal races a write and fails with ENOTEMPTY.
      await second?.stop();
      await rm(own, {recursive: true, force: true});
    }
  });
});
