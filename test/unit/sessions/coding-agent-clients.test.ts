// What the coding-agent mapping reads from real client requests (test/fixtures/coding-agent/, recorded from
// Claude Code 2.1.330 and Codex 0.169): session, thread and side requests, and the names that follow.

import assert from "node:assert/strict";
import {readdirSync, readFileSync} from "node:fs";
import type {IncomingHttpHeaders} from "node:http";
import {mkdtemp, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {CODEX_SIDE_REQUESTS, codexSideRequest, codexThread} from "../../../src/api/dialects/responses/agent-thread.ts";
import {CLAUDE_CODE_SIDE_REQUESTS, claudeCodeSideRequest, claudeCodeThread} from "../../../src/api/dialects/messages/agent-thread.ts";
import {systemText} from "../../../src/api/dialects/messages/content.ts";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {CodingAgentMap} from "../../../src/sessions/coding-agent.ts";
import {HandleRegistry} from "../../../src/sessions/handles.ts";

interface Recorded {headers: IncomingHttpHeaders; body: unknown}

function fixture(path: string): Recorded {
  const raw = JSON.parse(readFileSync(new URL(`../../fixtures/coding-agent/${path}.json`, import.meta.url), "utf8")) as {headers: Record<string, string>; body: unknown};
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

describe("Claude Code", () => {
  const signal = (name: string) => {
    const f = fixture(`claude-code/${name}`);
    return claudeCodeThread(f.headers, f.body);
  };

  test("session from X-Claude-Code-Session-Id; the main thread has no agent id, a subagent keeps its own", () => {
    assert.deepEqual(signal("main-turn-1"), {session: "c4816e1f-6cfd-49f9-9d3f-75530580b8cc", thread: "main", side: false});
    assert.deepEqual(signal("main-turn-2"), signal("main-turn-1"));
    assert.deepEqual(signal("subagent-1"), {session: "c4816e1f-6cfd-49f9-9d3f-75530580b8cc", thread: "ad019a8b985a1a26f", side: false});
    assert.notEqual(signal("fork-A-1").thread, signal("fork-B-1").thread, "two forks are two threads");
  });

  test("the session title and a compaction are side requests; the turn after a compaction is not", () => {
    assert.equal(signal("side-title").side, true);
    assert.equal(signal("compaction").side, true);
    assert.equal(signal("after-compaction").side, false);
    assert.equal(signal("interactive-main-turn-1").side, false);
  });

  test("without the header the session comes from metadata.user_id (JSON, or the older _session_ form); a quota probe is a side request", () => {
    const tools = [{name: "t", input_schema: {type: "object"}}];
    assert.deepEqual(claudeCodeThread({}, {tools, metadata: {user_id: JSON.stringify({device_id: "d", account_uuid: "", session_id: "s-9"})}}),
      {session: "s-9", thread: "main", side: false});
    assert.equal(claudeCodeThread({}, {tools, metadata: {user_id: "user_abc_account__session_1234abcd-aaaa"}}).session, "1234abcd-aaaa");
    assert.equal(claudeCodeThread({"x-claude-code-session-id": "s"}, {tools, max_tokens: 1}).side, true);
    assert.deepEqual(claudeCodeThread({}, {tools}), {session: null, thread: null, side: false}, "not Claude Code: no mapping");
  });

  test("the billing line that opens Claude Code's system prompt is dropped, so threads share the system prompt", () => {
    const system = (name: string) => systemText((fixture(`claude-code/${name}`).body as {system: {type: "text"; text: string}[]}).system)!;
    const raw = (fixture("claude-code/main-turn-1").body as {system: {text: string}[]}).system[0]!.text;
    assert.match(raw, /^x-anthropic-billing-header:/);
    assert.ok(!system("main-turn-1").includes("x-anthropic-billing-header"));
    const [main, sub] = [system("main-turn-1"), system("subagent-1")];
    assert.equal(main.split("\n")[0], sub.split("\n")[0], "both now start with the same block");
  });

  test("names: the main thread continues itself, the subagent has its own name, the title keeps nothing", async () => {
    const m = await map();
    const name = (f: string) => m.names(signal(f), "", "test-key");
    const main = name("main-turn-1")!;
    const sub = name("subagent-1")!;
    assert.notEqual(sub.keep, main.keep);
    assert.equal(sub.from, main.keep);
    assert.deepEqual(name("subagent-2"), {keep: sub.keep, from: sub.keep});
    assert.deepEqual(name("main-turn-2"), {keep: main.keep, from: main.keep});
  });
});

// Every recorded request, classified: a new fixture file must be added here (the first test checks that).
type Expected = "main" | "subagent" | `side: ${string}`;
const EXPECTED: Record<string, Expected> = {
  "claude-code/after-compaction": "main",
  "claude-code/bearer-main-turn-1": "main",
  "claude-code/bearer-main-turn-2": "main",
  "claude-code/bg-main-turn-1": "main",
  "claude-code/bg-main-turn-2": "main",
  "claude-code/bg-main-turn-3": "main",
  "claude-code/bg-subagent-1": "subagent",
  "claude-code/compaction": "side: compaction",
  "claude-code/continue-turn": "main",
  "claude-code/fork-A-1": "subagent",
  "claude-code/fork-B-1": "subagent",
  "claude-code/fork-parent-turn-1": "main",
  "claude-code/fork-parent-turn-2": "main",
  "claude-code/interactive-main-turn-1": "main",
  "claude-code/interactive-subagent-1": "subagent",
  "claude-code/main-turn-1": "main",
  "claude-code/main-turn-2": "main",
  "claude-code/scripted-continue-turn": "main",
  "claude-code/scripted-turn-1": "main",
  "claude-code/scripted-turn-1-result": "main",
  "claude-code/side-title": "side: title",
  "claude-code/subagent-1": "subagent",
  "claude-code/subagent-2": "subagent",
  "codex/after-compaction": "main",
  "codex/compaction": "side: compaction",
  "codex/fork-parent-turn-1": "main",
  "codex/fork-subagent-1": "subagent",
  "codex/main-turn-1": "main",
  "codex/main-turn-2": "main",
  "codex/main-turn-3": "main",
  "codex/resume-turn": "main",
  "codex/scripted-resume-turn": "main",
  "codex/scripted-turn-1": "main",
  "codex/scripted-turn-1-result": "main",
  "codex/subagent-1": "subagent",
};

/** The class the dialect's classifier gives a recorded request. */
function classify(path: string, r: Recorded = fixture(path)): Expected {
  const claude = path.startsWith("claude-code/");
  const reason = claude ? claudeCodeSideRequest(r.headers, r.body) : codexSideRequest(r.headers, r.body);
  const signal = claude ? claudeCodeThread(r.headers, r.body) : codexThread(r.headers, r.body);
  assert.notEqual(signal.session, null, `${path}: a session`);
  assert.equal(signal.side, reason !== null, `${path}: the signal agrees with the table`);
  if (reason !== null) return `side: ${reason}`;
  // Claude Code's main thread has no agent id; Codex's root thread is the session.
  return (claude ? signal.thread === "main" : signal.thread === signal.session) ? "main" : "subagent";
}

/** The recorded request without Claude Code's hint headers (sent only with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1). */
function withoutHints(r: Recorded): Recorded {
  const hints = ["x-claude-code-request-class", "x-claude-code-compaction", "x-claude-1p-request-class", "x-claude-code-prompt-id"];
  return {headers: Object.fromEntries(Object.entries(r.headers).filter(([k]) => !hints.includes(k))), body: r.body};
}

describe("every recorded request, classified", () => {
  test("the table names every fixture file", () => {
    const files = ["claude-code", "codex"].flatMap((dir) =>
      readdirSync(new URL(`../../fixtures/coding-agent/${dir}/`, import.meta.url)).filter((f) => f.endsWith(".json")).map((f) => `${dir}/${f.slice(0, -5)}`));
    assert.deepEqual(files.sort(), Object.keys(EXPECTED).sort());
  });

  for (const [path, expected] of Object.entries(EXPECTED)) {
    test(`${path}: ${expected}`, () => assert.equal(classify(path), expected));
  }

  test("without the hint headers the title and the compaction are still recognised", () => {
    for (const path of ["claude-code/side-title", "claude-code/compaction", "claude-code/interactive-main-turn-1", "claude-code/interactive-subagent-1", "claude-code/after-compaction"]) {
      assert.equal(classify(path, withoutHints(fixture(path))), EXPECTED[path], path);
    }
    assert.equal(classify("claude-code/compaction", withoutHints(fixture("claude-code/compaction"))), "side: compaction",
      "the summary instruction alone marks it");
  });

  test("the title has two signs of its own; a conversation whose beta flags were cut keeps its tools and stays kept", () => {
    const title = fixture("claude-code/side-title");
    const {system: _system, ...untitled} = title.body as {system?: unknown};
    assert.equal(classify("claude-code/side-title", {headers: title.headers, body: untitled}), "side: title", "the beta flags without tools");
    const {"anthropic-beta": _beta, ...noBeta} = title.headers;
    assert.equal(classify("claude-code/side-title", withoutHints({headers: noBeta, body: title.body})), "side: title", "the system prompt");
    // As with CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1 (some gateways): no claude-code- flag on the conversation either.
    const main = fixture("claude-code/main-turn-1");
    const cut = {headers: {...main.headers, "anthropic-beta": "interleaved-thinking-2025-05-14"}, body: main.body};
    assert.equal(classify("claude-code/main-turn-1", cut), "main");
  });

  test("Codex's compaction is recognised by its prompt when the turn metadata is missing", () => {
    const r = fixture("codex/compaction");
    const headers = {...r.headers};
    delete headers["x-codex-turn-metadata"];
    assert.equal(codexSideRequest(headers, r.body), "compaction");
  });

  test("a main-thread request without tools is kept (claude --tools \"\")", async () => {
    for (const path of ["claude-code/main-turn-1", "claude-code/main-turn-2", "claude-code/interactive-main-turn-1", "claude-code/continue-turn"]) {
      const r = fixture(path);
      const {tools: _dropped, ...noTools} = r.body as {tools?: unknown};
      assert.equal(classify(path, {headers: r.headers, body: noTools}), "main", `${path} without tools`);
      assert.equal(classify(path, {headers: r.headers, body: {...noTools, tools: []}}), "main", `${path} with tools: []`);
    }
    const m = await map();
    const noTools = (path: string) => {
      const r = fixture(path);
      const {tools: _dropped, ...body} = r.body as {tools?: unknown};
      return claudeCodeThread(r.headers, body);
    };
    const t1 = m.names(noTools("claude-code/main-turn-1"), "", "test-key")!;
    assert.notEqual(t1.keep, null, "the first turn keeps its state");
    assert.deepEqual(m.names(noTools("claude-code/main-turn-2"), "", "test-key"), {keep: t1.keep, from: t1.keep}, "the next turn continues from it");
    const sub = m.names(noTools("claude-code/subagent-1"), "", "test-key")!;
    assert.notEqual(sub.keep, null);
    assert.notEqual(sub.keep, t1.keep);
  });

  test("a subagent without tools is kept; the tables carry evidence for every case", () => {
    const r = fixture("claude-code/subagent-1");
    const {tools: _dropped, ...body} = r.body as {tools?: unknown};
    assert.equal(classify("claude-code/subagent-1", {headers: r.headers, body}), "subagent");
    for (const c of [...CLAUDE_CODE_SIDE_REQUESTS, ...CODEX_SIDE_REQUESTS]) assert.ok(c.evidence.length > 20, c.name);
  });
});
