// What the coding-agent mapping reads from real client requests (test/fixtures/coding-agent/, recorded from
// Claude Code 2.1.330 and Codex 0.169): session, thread and side requests, and the names that follow.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import type {IncomingHttpHeaders} from "node:http";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {codexThread} from "../../src/api/dialects/responses/agent-thread.ts";
import {createMemoryLogger} from "../../src/observability/log.ts";
import {CodingAgentMap} from "../../src/sessions/coding-agent.ts";
import {HandleRegistry} from "../../src/sessions/handles.ts";

interface Recorded {headers: IncomingHttpHeaders; body: unknown}

function fixture(path: string): Recorded {
  const raw = JSON.parse(readFileSync(new URL(`../fixtures/coding-agent/${path}.json`, import.meta.url), "utf8")) as {headers: Record<string, string>; body: unknown};
  // Node lower-cases incoming header names.
  return {headers: Object.fromEntries(Object.entries(raw.headers).map(([k, v]) => [k.toLowerCase(), v])), body: raw.body};
}

const cleanup: (() => Promise<void>)[] = [];
after(() => Promise.all(cleanup.map((f) => f())));

async function map(): Promise<CodingAgentMap> {
  const dir = await mkdtemp(join(tmpdir(), "svc-agent-clients-"));
  const reg = await HandleRegistry.open({dir, maxHandles: 8, ttlS: 600, identity: {model: "m", engine: "e"}, logger: createMemoryLogger()});
  cleanup.push(async () => {
    await reg.close();
    await rm(dir, {recursive: true, force: true});
  });
  return new CodingAgentMap(reg);
}

describe("Codex", () => {
  const signal = (name: string) => codexThread(fixture(`codex/${name}`).headers, fixture(`codex/${name}`).body);

  test("session from session-id, thread from thread-id; a subagent shares the session, not the thread", () => {
    const main = signal("main-turn-1");
    assert.deepEqual(main, {session: "01a2021a-5d64-7201-86e0-7f81f698e737", thread: "01a2021a-5d64-7201-86e0-7f81f698e737", side: false});
    const sub = signal("subagent-1");
    assert.equal(sub.session, main.session);
    assert.notEqual(sub.thread, main.thread);
    assert.equal(sub.side, false);
  });

  test("a compaction is a side request; the turn after it is not", () => {
    assert.equal(signal("compaction").side, true);
    assert.equal(signal("after-compaction").side, false);
  });

  test("without headers the body's prompt_cache_key names the session", () => {
    assert.deepEqual(codexThread({}, {prompt_cache_key: "pk-1"}), {session: "pk-1", thread: null, side: false});
    assert.deepEqual(codexThread({}, {}), {session: null, thread: null, side: false});
  });

  test("names: turns continue their thread, the subagent tries the root first, the compaction keeps nothing", async () => {
    const m = await map();
    const name = (f: string) => m.names(signal(f), "", "test-key");
    const t1 = name("main-turn-1")!;
    assert.equal(t1.from, null);
    assert.deepEqual(name("main-turn-2"), {keep: t1.keep, from: t1.keep});
    const sub = name("subagent-1")!;
    assert.notEqual(sub.keep, t1.keep);
    assert.equal(sub.from, t1.keep);
    assert.deepEqual(name("main-turn-3"), {keep: t1.keep, from: t1.keep});
    const c = name("compaction")!;
    assert.equal(c.keep, null);
  });
});
