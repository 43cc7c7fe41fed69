// Real coding agents against the server, with their default system prompts and tools: Claude Code (the pinned
// devDependency @anthropic-ai/claude-code, headless `claude -p`) on /v1/messages and Codex (@openai/codex,
// `codex exec` with a custom provider, wire_api "responses") on /v1/responses, each on a server with
// SVC_FORK=1 SVC_FORK_MAP=coding-agent. The model is scripted (test/fixtures/scripted-model): after the user's
// task it writes a call of the agent's own shell tool (`ls`), after the call's result a short final answer. The
// agent runs in a scratch folder holding a known file, so the file's name in the call's result shows the agent ran
// the call. Each agent then runs two more turns in the same session (Claude Code: --continue, then --resume <id>;
// Codex: resume --last, then resume <thread id>), and every request after the first must start from the
// thread's kept state and read most of its prompt from the cache.
//
// The model's training length (TRAINING_LENGTH) is below both agents' default prompts and the server runs with
// SVC_CTX_SIZE above them, as a user of a small model would: the prompts only fit past the training length.
//
// What is checked comes from three places: the agent's own JSON output (the call it ran, the call's output, the
// final answer, the session id, the usage it read), the requests it sent and the replies it got (a recording proxy
// between the agent and the server, test/fixtures/coding-agent/recorder.ts: the call and its result sent back,
// X-Svc-From, the usage's cached tokens) and the server's request log lines (one per request, cached share).
//
// RECORD_AGENT_FIXTURES=1 also writes the requests as fixtures (test/fixtures/coding-agent/{claude-code,codex}/scripted-*.json).

import assert from "node:assert/strict";
import {spawn} from "node:child_process";
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {after, before, describe, test} from "node:test";
import {buildScenario, writeScriptedModel, type Scenario} from "../fixtures/scripted-model/build.ts";
import {AFTER_TOOL_PROMPT, AGENT_TEMPLATE, GENERATION_PROMPT} from "../fixtures/scripted-model/templates.ts";
import {sseData, startRecorder, type Exchange, type Recorder} from "../fixtures/coding-agent/recorder.ts";
import {writeFixture} from "../fixtures/coding-agent/sanitise.ts";
import {get, startServer, type RunningServer} from "../../support/server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURES = join(ROOT, "test/fixtures/coding-agent");
const RECORD = process.env.RECORD_AGENT_FIXTURES === "1";
const installed = (pkg: string) => (JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as {version: string}).version;
/** The versions package.json pins (devDependencies, exact). */
const CLAUDE_VERSION = installed("@anthropic-ai/claude-code");
const CODEX_VERSION = installed("@openai/codex");

/** The scripted model's training length: below both agents' default prompts (Claude Code ~12.6k, Codex ~9.2k tokens here). */
const TRAINING_LENGTH = 8192;
/** SVC_CTX_SIZE: past the training length, room for the prompts and a few turns. */
const CTX_SIZE = 32768;
/** In the scratch folder; a name no prompt holds, so finding it in a request means the agent ran the call. */
const KNOWN_FILE = "svc-probe-7q3k.txt";
/** The model's final answer after the call's result. */
const ANSWER = "Listed the folder. Done.";
/**
 * The share of a follow-up request's prompt that must come from the cache. What a follow-up adds since the state it
 * resumes is small: the reply as the client sends it back (a scripted reply's tokens are not the tokenizer's, so
 * reuse stops where the reply starts), the tool result or the next user message; that is about 1% of these
 * 9-13k-token prompts, and a cold start reads 0%. 0.8 leaves room for an agent adding reminders to a later turn,
 * and still fails on any request that recomputes the system prompt and tools.
 */
const CACHED_SHARE = 0.8;
/** Per agent run: the first has a cold 9-13k-token prefill (7 to 40 s measured on this 2-core machine, by load). */
const RUN_TIMEOUT_MS = 200_000;

// --- The scripted model: two branches ------------------------------------------------------------------------

describe("a scripted model with two branches (the agents' model)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "svc-agents-branches-"));
  });
  after(() => {
    rmSync(dir, {recursive: true, force: true});
  });

  test("AGENT_TEMPLATE's prompt ends in \"\\n\" after a user message and in \"\\n\\n\" after a tool result: two triggers, disjoint scripts", async () => {
    const s = await buildScenario(dir, "branches", {chatTemplate: AGENT_TEMPLATE, contextLength: TRAINING_LENGTH, branches: [
      {promptTail: GENERATION_PROMPT, reply: "<tool_call>\n{\"name\": \"x\", \"arguments\": {\"a\": \"b\"}}\n</tool_call><|im_end|>"},
      {promptTail: AFTER_TOOL_PROMPT, reply: `${ANSWER}<|im_end|>`},
    ]});
    assert.deepEqual(s.branches.map((b) => b.trigger), [198, 1116]);
    assert.deepEqual([s.trigger, s.script], [s.branches[0]!.trigger, s.branches[0]!.script], "trigger and script are the first branch's");
    const predecessors = s.branches.map((b) => [b.trigger, ...b.script.slice(0, -1)]);
    assert.deepEqual(predecessors[0]!.filter((id) => predecessors[1]!.includes(id)), [], "no token continues both scripts");
  });

  test("two branches ending in the same token, or sharing a predecessor, are refused", async () => {
    await assert.rejects(buildScenario(dir, "same-tail", {chatTemplate: AGENT_TEMPLATE, branches: [
      {promptTail: GENERATION_PROMPT, reply: "a<|im_end|>"},
      {promptTail: "<|im_start|>user\n", reply: "b<|im_end|>"},
    ]}), /two branches end in the same token/);
    await assert.rejects(writeScriptedModel(join(dir, "shared.gguf"), {chatTemplate: AGENT_TEMPLATE, branches: [
      {trigger: 198, script: [64, 65, 2]},
      {trigger: 1116, script: [66, 65, 67, 2]},
    ]}), /token 65 \("Q"\) is a predecessor twice \(branch 0 trigger\+script position 2 and branch 1 trigger\+script position 2\)/);
  });
});

// --- Running an agent ------------------------------------------------------------------------------------------

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines. */
  events: any[];
  /** The requests the agent sent during this run, as the recorder saw them. */
  exchanges: Exchange[];
  ms: number;
}

function bin(name: string): string {
  const path = join(ROOT, "node_modules/.bin", name);
  assert.ok(existsSync(path), `${path} is missing: npm ci installs it (devDependency)`);
  return path;
}

async function runAgent(recorder: Recorder, command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  const from = recorder.exchanges.length;
  const started = performance.now();
  // Only what the agent needs: nothing of this machine's own agent settings or keys reaches it.
  const child = spawn(command, args, {cwd, env: {PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8", ...env}, stdio: ["ignore", "pipe", "pipe"]});
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
  clearTimeout(timer);
  const events = stdout.split("\n").flatMap((line) => {
    try {
      return line.trim().startsWith("{") ? [JSON.parse(line)] : [];
    } catch {
      return [];
    }
  });
  return {code, signal, stdout, stderr, events, exchanges: recorder.exchanges.slice(from), ms: performance.now() - started};
}

function describeRun(run: Run): string {
  const requests = run.exchanges.map((e) => `${e.method} ${e.url} -> ${e.status}`).join("; ");
  return `exit ${run.code}${run.signal ? ` (${run.signal})` : ""} after ${Math.round(run.ms)} ms; requests: ${requests || "none"}\n` +
    `stdout (end): ${run.stdout.slice(-3000)}\nstderr (end): ${run.stderr.slice(-2000)}`;
}

// --- What the server answered -----------------------------------------------------------------------------------

interface Answer {
  /** Prompt tokens in all, and how many of them were read from the cache. */
  prompt: number;
  cached: number;
  /** The reply's text and calls. */
  text: string;
  calls: {id: string; name: string; args: unknown}[];
  /** stop_reason (Messages) or status (Responses). */
  end: string | null;
  from: string | null;
  keep: string | null;
}

function header(e: Exchange, name: string): string | null {
  const v = e.responseHeaders[name];
  return typeof v === "string" ? v : null;
}

/** A streamed Anthropic Messages reply. Anthropic's usage: input_tokens are the uncached ones, cache_read_input_tokens the cached. */
function messagesAnswer(e: Exchange): Answer {
  const events = sseData(e.responseText);
  const usage = events.filter((d) => d.type === "message_delta").at(-1)?.usage ?? {};
  const blocks: {type: string; text: string; id?: string; name?: string; json: string}[] = [];
  for (const d of events) {
    if (d.type === "content_block_start") blocks[d.index] = {...d.content_block, text: d.content_block.text ?? "", json: ""};
    if (d.type === "content_block_delta" && d.delta.type === "text_delta") blocks[d.index]!.text += d.delta.text;
    if (d.type === "content_block_delta" && d.delta.type === "input_json_delta") blocks[d.index]!.json += d.delta.partial_json;
  }
  const cached = (usage.cache_read_input_tokens as number | undefined) ?? 0;
  return {
    prompt: (usage.input_tokens ?? 0) + cached + (usage.cache_creation_input_tokens ?? 0),
    cached,
    text: blocks.filter((b) => b.type === "text").map((b) => b.text).join(""),
    calls: blocks.filter((b) => b.type === "tool_use").map((b) => ({id: b.id!, name: b.name!, args: JSON.parse(b.json || "{}")})),
    end: events.filter((d) => d.type === "message_delta").at(-1)?.delta?.stop_reason ?? null,
    from: header(e, "x-svc-from"),
    keep: header(e, "x-svc-keep"),
  };
}

/** A streamed Responses reply. OpenAI's usage: input_tokens are all of them, cached_tokens the cached part. */
function responsesAnswer(e: Exchange): Answer {
  const done = sseData(e.responseText).find((d) => d.type === "response.completed")?.response;
  const output: any[] = done?.output ?? [];
  return {
    prompt: done?.usage?.input_tokens ?? 0,
    cached: done?.usage?.input_tokens_details?.cached_tokens ?? 0,
    text: output.filter((i) => i.type === "message").flatMap((i) => i.content.map((c: {text: string}) => c.text)).join(""),
    calls: output.filter((i) => i.type === "function_call").map((i) => ({id: i.call_id, name: i.name, args: JSON.parse(i.arguments)})),
    end: done?.status ?? null,
    from: header(e, "x-svc-from"),
    keep: header(e, "x-svc-keep"),
  };
}

/** The server's per-request log lines (observability/request-log.ts), in order. */
function requestLines(server: RunningServer): {route: string; status: number; prompt: number; cachedPercent: number}[] {
  return server.logs.filter((l) => / request id=/.test(l)).map((l) => ({
    route: /\broute=(\S+)/.exec(l)?.[1] ?? "",
    status: Number(/\bstatus=(\d+)/.exec(l)?.[1]),
    prompt: Number(/\bprompt=(\d+)/.exec(l)?.[1]),
    cachedPercent: Number(/\bcached=(\d+)%/.exec(l)?.[1]),
  }));
}

/** The follow-up request started from the thread's kept state and read most of its prompt from the cache. */
function assertResumed(a: Answer, what: string): void {
  assert.equal(a.from, "used", `${what}: X-Svc-From (the thread's kept state matched the request)`);
  assert.ok(a.cached / a.prompt >= CACHED_SHARE, `${what}: ${a.cached} of ${a.prompt} prompt tokens cached, below ${CACHED_SHARE}`);
}

// --- One agent's rig: scripted model, server, recorder, scratch folder -----------------------------------------

interface Rig {
  dir: string;
  work: string;
  home: string;
  scenario: Scenario;
  server: RunningServer;
  recorder: Recorder;
}

async function rig(name: string, call: string): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), `svc-agents-${name}-`));
  let server: RunningServer | undefined;
  try {
    const scenario = await buildScenario(dir, name, {
      chatTemplate: AGENT_TEMPLATE,
      contextLength: TRAINING_LENGTH,
      branches: [
        // After the user's task: the agent's shell tool, `ls`.
        {promptTail: GENERATION_PROMPT, reply: `<tool_call>\n${call}\n</tool_call><|im_end|>`},
        // After the tool's result: the final answer.
        {promptTail: AFTER_TOOL_PROMPT, reply: `${ANSWER}<|im_end|>`},
      ],
    });
    // One region: the context's positions are SVC_CTX_SIZE × SVC_PARALLEL, and attention over unused positions
    // makes a cold 12k-token prefill slower; with one region a follow-up also has nothing to reuse but its own thread.
    server = await startServer({SVC_MODEL: scenario.path, SVC_FORK: "1", SVC_FORK_MAP: "coding-agent", SVC_CTX_SIZE: String(CTX_SIZE), SVC_PARALLEL: "1"});
    const health = await get(`${server.url}/health`);
    assert.equal(health.body.chat_template?.family?.id, "hermes", "the server reads AGENT_TEMPLATE as Hermes JSON calls");
    const recorder = await startRecorder(server.url);
    const work = join(dir, "work");
    const home = join(dir, "home");
    mkdirSync(work);
    mkdirSync(home);
    writeFileSync(join(work, KNOWN_FILE), "svc coding-agent test\n");
    return {dir, work, home, scenario, server, recorder};
  } catch (err) {
    await server?.stop();
    rmSync(dir, {recursive: true, force: true});
    throw err;
  }
}

async function unrig(r: Rig | undefined): Promise<void> {
  if (!r) return;
  await r.recorder.close();
  await r.server.stop();
  rmSync(r.dir, {recursive: true, force: true});
}

/** Every request of the agent reached the server and was answered; the server logged each with status 200. */
function assertAllAnswered(r: Rig, route: string): void {
  const bad = r.recorder.exchanges.filter((e) => e.status !== 200);
  assert.deepEqual(bad.map((e) => `${e.method} ${e.url} -> ${e.status}: ${e.responseText.slice(0, 300)}`), []);
  const lines = requestLines(r.server);
  assert.deepEqual(lines.map((l) => `${l.route} ${l.status}`), r.recorder.exchanges.map(() => `${route} 200`), "one request log line per request");
}

function record(agentDir: string, file: string, e: Exchange, note: string): void {
  if (RECORD) writeFixture(join(FIXTURES, agentDir, `${file}.json`), e, note);
}

// --- Claude Code -----------------------------------------------------------------------------------------------

describe(`Claude Code ${CLAUDE_VERSION} on /v1/messages, default system prompt and tools`, () => {
  const CALL = {name: "Bash", args: {command: "ls", description: "List files in current directory"}};
  let r: Rig;
  let sessionId: string;

  before(async () => {
    r = await rig("claude", `{"name": "Bash", "arguments": {"command": "ls", "description": "List files in current directory"}}`);
  });
  after(async () => {
    await unrig(r);
  });

  const claude = (args: string[]) => runAgent(r.recorder, bin("claude"), [...args, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"], r.work, {
    HOME: r.home,
    ANTHROPIC_BASE_URL: r.recorder.url,
    ANTHROPIC_API_KEY: "test-key",
    // --dangerously-skip-permissions refuses to run as root without it.
    IS_SANDBOX: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  });

  /** One -p run: two requests (the task, then the call's result), the call run, the scripted answer. */
  function checkTurn(run: Run, task: string): {first: Answer; second: Answer} {
    assert.equal(run.code, 0, describeRun(run));
    assert.deepEqual(run.exchanges.map((e) => `${e.method} ${e.url}`), ["POST /v1/messages?beta=true", "POST /v1/messages?beta=true"],
      `two requests: the task, then the call's result\n${describeRun(run)}`);
    const [e1, e2] = run.exchanges as [Exchange, Exchange];
    const [first, second] = [messagesAnswer(e1), messagesAnswer(e2)];

    // The agent's request: its default tools, the task last; the model's reply: the Bash call.
    assert.ok((e1.body.tools as {name: string}[]).some((t) => t.name === "Bash"), "Claude Code's own Bash tool is offered");
    // Claude Code 2.1.33x sends its environment as a system message after the user's (mid-conversation system messages).
    const lastUser = (e1.body.messages as {role: string}[]).filter((m) => m.role === "user").at(-1);
    assert.ok(JSON.stringify(lastUser).includes(task), "the first request's last user message is the task");
    assert.deepEqual(first.calls.map((c) => ({name: c.name, args: c.args})), [CALL], "the model's call");
    assert.equal(first.end, "tool_use");

    // The agent ran it and sent the call and its result back.
    const toolUse = run.events.find((ev) => ev.type === "assistant" && ev.message.content.some((b: {type: string}) => b.type === "tool_use"));
    assert.ok(toolUse, "stream-json shows the call");
    const result = run.events.flatMap((ev) => (ev.type === "user" ? ev.message.content : [])).find((b: {type: string}) => b.type === "tool_result");
    assert.ok(result, "stream-json shows the call's result");
    assert.equal(result.is_error, false);
    assert.ok(JSON.stringify(result.content).includes(KNOWN_FILE), `the call's result lists ${KNOWN_FILE}: ${JSON.stringify(result.content)}`);
    const [sentCall, sentResult] = e2.body.messages.slice(-2) as [{role: string; content: any[]}, {role: string; content: any[]}];
    assert.deepEqual(sentCall.content.filter((b) => b.type === "tool_use").map((b) => ({id: b.id, name: b.name, input: b.input})),
      [{id: first.calls[0]!.id, name: CALL.name, input: CALL.args}], "the second request repeats the call");
    const sent = sentResult.content.find((b) => b.type === "tool_result");
    assert.equal(sent?.tool_use_id, first.calls[0]!.id, "the result answers the call");
    assert.ok(JSON.stringify(sent.content).includes(KNOWN_FILE), "the result sent back lists the file");

    // The turn ends with the scripted answer.
    assert.equal(second.text, ANSWER);
    assert.equal(second.end, "end_turn");
    const done = run.events.find((ev) => ev.type === "result");
    assert.ok(done, `a result event\n${describeRun(run)}`);
    assert.equal(done.subtype, "success");
    assert.equal(done.is_error, false);
    assert.equal(done.result, ANSWER);
    assert.equal(done.num_turns, 2);
    // Claude Code adds up the server's usage: what it reports read from the cache is what the server said.
    assert.equal(done.usage.cache_read_input_tokens, first.cached + second.cached, "the cache reads Claude Code reports");
    return {first, second};
  }

  test("turn 1: the model's Bash call runs, its result goes back, the turn ends with the scripted answer", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    const task = "List the files in this folder.";
    const run = await claude(["-p", task]);
    const {first, second} = checkTurn(run, task);
    assert.ok(!JSON.stringify(run.exchanges[0]!.body).includes(KNOWN_FILE), "the first request does not name the file: the call's result does");
    assert.ok(first.prompt > TRAINING_LENGTH, `the default prompt (${first.prompt} tokens) is longer than the model's training length`);
    assert.equal(first.cached, 0, "the first request starts cold");
    assert.equal(first.from, null);
    assert.equal(first.keep, "accepted", "the main thread is kept");
    assertResumed(second, "turn 1, after the call");
    sessionId = run.events.find((ev) => ev.type === "result").session_id;
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    record("claude-code", "scripted-turn-1", run.exchanges[0]!, `Claude Code ${CLAUDE_VERSION}, claude -p (test/slow/coding-agents.test.ts, scripted model): turn 1, first request, the task. Default system prompt and tools.`);
    record("claude-code", "scripted-turn-1-result", run.exchanges[1]!, "Same run: second request, the Bash call and its tool_result (the folder's listing).");
  });

  test("turn 2 (--continue): same session, both requests resume the kept state", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    assert.ok(sessionId, "turn 1 ran");
    const task = "List them again.";
    const run = await claude(["-p", "--continue", task]);
    const {first, second} = checkTurn(run, task);
    assert.equal(run.events.find((ev) => ev.type === "result").session_id, sessionId, "--continue keeps the session id");
    assertResumed(first, "turn 2, the task");
    assertResumed(second, "turn 2, after the call");
    record("claude-code", "scripted-continue-turn", run.exchanges[0]!, "claude -p --continue after scripted-turn-1: same session id, extends turn 1's second request and its answer.");
  });

  test("turn 3 (--resume <session id>): same session, both requests resume the kept state", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    assert.ok(sessionId, "turn 1 ran");
    const task = "Once more, please.";
    const run = await claude(["-p", "--resume", sessionId, task]);
    const {first, second} = checkTurn(run, task);
    assert.equal(run.events.find((ev) => ev.type === "result").session_id, sessionId, "--resume keeps the session id");
    assertResumed(first, "turn 3, the task");
    assertResumed(second, "turn 3, after the call");
    assertAllAnswered(r, "messages");
    for (const l of requestLines(r.server).slice(1)) assert.ok(l.cachedPercent >= CACHED_SHARE * 100, `log line cached=${l.cachedPercent}%`);
  });
});

// --- Codex -----------------------------------------------------------------------------------------------------

describe(`Codex ${CODEX_VERSION} on /v1/responses, default instructions and tools`, () => {
  const CALL = {name: "exec_command", args: {cmd: "ls"}};
  let r: Rig;
  let codexHome: string;
  let threadId: string;
  /** Codex's turn.completed usage is the thread's running total; the server's cached tokens summed over the thread. */
  let cachedSoFar = 0;

  before(async () => {
    r = await rig("codex", `{"name": "exec_command", "arguments": {"cmd": "ls"}}`);
    codexHome = join(r.dir, "codex-home");
    mkdirSync(codexHome);
    writeFileSync(join(codexHome, "config.toml"), [
      `model = "test-model"`,
      `model_provider = "local"`,
      ``,
      `[model_providers.local]`,
      `name = "local"`,
      `base_url = "${r.recorder.url}/v1"`,
      `env_key = "LOCAL_KEY"`,
      `wire_api = "responses"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ``,
    ].join("\n"));
  });
  after(async () => {
    await unrig(r);
  });

  const codex = (args: string[]) => runAgent(r.recorder, bin("codex"), ["exec", "--skip-git-repo-check", "--json", ...args], r.work, {
    HOME: r.home,
    CODEX_HOME: codexHome,
    LOCAL_KEY: "test-key",
  });

  function checkTurn(run: Run, task: string): {first: Answer; second: Answer} {
    assert.equal(run.code, 0, describeRun(run));
    assert.deepEqual(run.exchanges.map((e) => `${e.method} ${e.url}`), ["POST /v1/responses", "POST /v1/responses"],
      `two requests: the task, then the call's result\n${describeRun(run)}`);
    const [e1, e2] = run.exchanges as [Exchange, Exchange];
    const [first, second] = [responsesAnswer(e1), responsesAnswer(e2)];

    assert.ok((e1.body.tools as {name?: string}[]).some((t) => t.name === CALL.name), "Codex's own exec_command tool is offered");
    assert.ok(JSON.stringify(e1.body.input.at(-1)).includes(task), "the first request ends with the task");
    assert.deepEqual(first.calls.map((c) => ({name: c.name, args: c.args})), [CALL], "the model's call");
    assert.equal(first.end, "completed");

    // Codex ran it (in its default sandbox) and sent the call and its output back.
    const ran = run.events.filter((ev) => ev.type === "item.completed" && ev.item.type === "command_execution").map((ev) => ev.item);
    assert.equal(ran.length, 1, `one command ran\n${describeRun(run)}`);
    assert.equal(ran[0].exit_code, 0);
    assert.ok(ran[0].aggregated_output.includes(KNOWN_FILE), `the command's output lists ${KNOWN_FILE}: ${JSON.stringify(ran[0].aggregated_output)}`);
    const items = e2.body.input as {type: string; call_id?: string; name?: string; arguments?: string; output?: unknown}[];
    const sentCall = items.filter((i) => i.type === "function_call").at(-1);
    assert.deepEqual({call_id: sentCall?.call_id, name: sentCall?.name, args: JSON.parse(sentCall?.arguments ?? "null")},
      {call_id: first.calls[0]!.id, name: CALL.name, args: CALL.args}, "the second request repeats the call");
    const sentOutput = items.at(-1)!;
    assert.equal(sentOutput.type, "function_call_output");
    assert.equal(sentOutput.call_id, first.calls[0]!.id, "the output answers the call");
    assert.ok(JSON.stringify(sentOutput.output).includes(KNOWN_FILE), "the output sent back lists the file");

    assert.equal(second.text, ANSWER);
    assert.equal(second.end, "completed");
    const said = run.events.filter((ev) => ev.type === "item.completed" && ev.item.type === "agent_message").map((ev) => ev.item.text);
    assert.deepEqual(said, [ANSWER], "Codex's final message");
    const done = run.events.find((ev) => ev.type === "turn.completed");
    assert.ok(done, `a turn.completed event\n${describeRun(run)}`);
    assert.ok(!run.events.some((ev) => ev.type === "turn.failed" || ev.type === "error"), "no failure event");
    cachedSoFar += first.cached + second.cached;
    assert.equal(done.usage.cached_input_tokens, cachedSoFar, "the cached tokens Codex reports (the thread's total) are the server's");
    return {first, second};
  }

  test("turn 1: the model's exec_command call runs, its output goes back, the turn ends with the scripted answer", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    const task = "List the files in this folder.";
    const run = await codex([task]);
    const {first, second} = checkTurn(run, task);
    assert.ok(!JSON.stringify(run.exchanges[0]!.body).includes(KNOWN_FILE), "the first request does not name the file: the call's result does");
    assert.ok(first.prompt > TRAINING_LENGTH, `the default prompt (${first.prompt} tokens) is longer than the model's training length`);
    assert.equal(first.cached, 0, "the first request starts cold");
    assert.equal(first.from, null);
    assert.equal(first.keep, "accepted", "the root thread is kept");
    assertResumed(second, "turn 1, after the call");
    threadId = run.events.find((ev) => ev.type === "thread.started").thread_id;
    assert.match(threadId, /^[0-9a-f-]{36}$/);
    record("codex", "scripted-turn-1", run.exchanges[0]!, `Codex ${CODEX_VERSION}, codex exec (test/slow/coding-agents.test.ts, scripted model): turn 1, first request, the task. Default instructions and tools, default read-only sandbox.`);
    record("codex", "scripted-turn-1-result", run.exchanges[1]!, "Same run: second request, the exec_command call and its function_call_output (the folder's listing).");
  });

  test("turn 2 (exec resume --last): same thread, both requests resume the kept state", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    assert.ok(threadId, "turn 1 ran");
    const task = "List them again.";
    const run = await codex(["resume", "--last", task]);
    const {first, second} = checkTurn(run, task);
    assert.equal(run.events.find((ev) => ev.type === "thread.started")?.thread_id, threadId, "resume --last continues the thread");
    assertResumed(first, "turn 2, the task");
    assertResumed(second, "turn 2, after the call");
    record("codex", "scripted-resume-turn", run.exchanges[0]!, "codex exec resume --last after scripted-turn-1: same thread, extends turn 1's second request and its answer.");
  });

  test("turn 3 (exec resume <thread id>): same thread, both requests resume the kept state", {timeout: RUN_TIMEOUT_MS + 10_000}, async () => {
    assert.ok(threadId, "turn 1 ran");
    const task = "Once more, please.";
    const run = await codex(["resume", threadId, task]);
    const {first, second} = checkTurn(run, task);
    assert.equal(run.events.find((ev) => ev.type === "thread.started")?.thread_id, threadId, "resume <id> continues the thread");
    assertResumed(first, "turn 3, the task");
    assertResumed(second, "turn 3, after the call");
    assertAllAnswered(r, "responses");
    for (const l of requestLines(r.server).slice(1)) assert.ok(l.cachedPercent >= CACHED_SHARE * 100, `log line cached=${l.cachedPercent}%`);
  });
});
