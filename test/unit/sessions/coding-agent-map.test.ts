// The coding-agent mapping at registry level: names per key, session and thread; a thread continues from
// itself; a new thread tries its session's main thread; side requests never keep; two keys never share a
// name; the mapping makes room among its own names when every handle is taken.

import assert from "node:assert/strict";
import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {AGENT_NAME_PREFIX, CodingAgentMap, threadOpening} from "../../../src/sessions/coding-agent.ts";
import {HandleRegistry} from "../../../src/sessions/handles.ts";

const roots: string[] = [];
const opened: HandleRegistry[] = [];
after(async () => {
  await Promise.all(opened.map((r) => r.close()));
  await Promise.all(roots.map((r) => rm(r, {recursive: true, force: true})));
});

async function registry(max = 8, clock = {t: 1_700_000_000_000}) {
  const dir = await mkdtemp(join(tmpdir(), "svc-agent-map-test-"));
  roots.push(dir);
  const reg = await HandleRegistry.open({dir, maxHandles: max, ttlS: 600, identity: {model: "m", engine: "e"}, logger: createMemoryLogger(), now: () => clock.t});
  opened.push(reg);
  return reg;
}

/** Keeps a state under `name` the way a finished request does. */
async function keep(reg: HandleRegistry, name: string): Promise<void> {
  const ticket = reg.begin({keep: name});
  assert.equal(ticket.keep, "ok");
  await reg.keep(name, {tokens: [1, 2, 3], cuts: [3]}, async (path) => writeFile(path, Buffer.alloc(8, 1)));
  ticket.release();
}

const main = {session: "s-1", thread: null, side: false};

describe("coding-agent mapping", () => {
  test("a session's first thread keeps under a derived name, then continues from it", async () => {
    const map = new CodingAgentMap(await registry());
    const first = map.names(main, "opening-A", "key-1")!;
    assert.equal(first.from, null);
    assert.match(first.keep!, /^agent\.[0-9a-f]{8}\.[0-9a-f]{12}\.[0-9a-f]{12}$/);
    assert.ok(!first.keep!.includes("s-1") && !first.keep!.includes("key-1"), "neither session id nor key in the clear");
    const second = map.names(main, "opening-A", "key-1")!;
    assert.deepEqual(second, {keep: first.keep, from: first.keep});
  });

  test("a new thread (a subagent) keeps its own name and tries the session's main thread first", async () => {
    const map = new CodingAgentMap(await registry());
    const parent = map.names(main, "opening-A", "k")!.keep!;
    const sub = map.names(main, "opening-B", "k")!;
    assert.notEqual(sub.keep, parent);
    assert.equal(sub.from, parent);
    assert.deepEqual(map.names(main, "opening-B", "k"), {keep: sub.keep, from: sub.keep}, "its next request continues from itself");
  });

  test("an explicit thread id outranks the opening", async () => {
    const map = new CodingAgentMap(await registry());
    const a = map.names({...main, thread: "t1"}, "x", "k")!.keep;
    const b = map.names({...main, thread: "t1"}, "y", "k")!.keep;
    assert.equal(a, b);
  });

  test("a side request starts from its thread (or the main one) and never keeps", async () => {
    const map = new CodingAgentMap(await registry());
    const parent = map.names(main, "opening-A", "k")!.keep!;
    assert.deepEqual(map.names({...main, side: true}, "title prompt", "k"), {keep: null, from: parent});
    assert.deepEqual(map.names({...main, side: true}, "opening-A", "k"), {keep: null, from: parent});
    assert.deepEqual(map.names(main, "opening-A", "k"), {keep: parent, from: parent}, "the conversation's state is still its own");
  });

  test("two keys, or two sessions, never share a name; no session means no mapping", async () => {
    const map = new CodingAgentMap(await registry());
    const k1 = map.names(main, "o", "key-1")!.keep;
    const k2 = map.names(main, "o", "key-2")!.keep;
    const anon = map.names(main, "o", null)!.keep;
    const other = map.names({...main, session: "s-2"}, "o", "key-1")!.keep;
    assert.equal(new Set([k1, k2, anon, other]).size, 4);
    assert.equal(map.names({session: null, thread: null, side: false}, "o", "key-1"), null);
  });

  test("with every handle taken, the least recently used agent thread is released for a new one; client names are left alone", async () => {
    const clock = {t: 1_700_000_000_000};
    const reg = await registry(3, clock);
    const map = new CodingAgentMap(reg);
    await keep(reg, "client-chosen");
    clock.t += 1000;
    const a = map.names(main, "A", "k")!.keep!;
    await keep(reg, a);
    clock.t += 1000;
    const b = map.names(main, "B", "k")!.keep!;
    await keep(reg, b);
    assert.equal(reg.list().length, 3);
    clock.t += 1000;
    const c = map.names(main, "C", "k")!.keep!;
    const live = reg.list().map((h) => h.name).sort();
    assert.deepEqual(live, ["client-chosen", b].sort(), "the oldest agent thread went, the client's name stayed");
    assert.equal(reg.begin({keep: c}).keep, "ok", "the new thread has room");
    assert.ok(c.startsWith(AGENT_NAME_PREFIX));
  });
});

describe("threadOpening", () => {
  test("system prompt and first user message; later turns do not change it", () => {
    const turn1 = {kind: "chat" as const, addGenerationPrompt: true, continueFinalMessage: false,
      messages: [{role: "system" as const, content: "sys"}, {role: "user" as const, content: "task"}]};
    const turn2 = {...turn1, messages: [...turn1.messages, {role: "assistant" as const, content: "ok"}, {role: "user" as const, content: "more"}]};
    assert.equal(threadOpening(turn1), threadOpening(turn2));
    assert.notEqual(threadOpening(turn1), threadOpening({...turn1, messages: [turn1.messages[0]!, {role: "user" as const, content: "other"}]}));
    assert.equal(threadOpening({kind: "text", text: "raw"}), "");
  });
});
