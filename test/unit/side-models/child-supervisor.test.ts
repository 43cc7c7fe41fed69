// The child supervisor on a real child process (test/fixtures/children/scripted-child.mjs, plain JavaScript so each start
// costs only node's own): ready and messages, restarts after a crash with backoff and their counts, the run of failures
// forgotten after a healthy period, giving up, a planned stop, the idle health check, the first start's failure, stop,
// a request's wait bounded, and where a child script is found from source and from a build.

import assert from "node:assert/strict";
import {fork, spawn} from "node:child_process";
import {createServer} from "node:net";
import {fileURLToPath} from "node:url";
import {afterEach, describe, test} from "node:test";
import {ChildFailedError, ChildSupervisor, type ChildExit, type SupervisorOptions} from "../../../src/side-models/child-supervisor.ts";
import {ChildRegistry, childScript} from "../../../src/side-models/children.ts";
import {EngineRestartingError} from "../../../src/engine/errors.ts";
import {createMemoryLogger} from "../../../src/observability/log.ts";

const SCRIPT = fileURLToPath(new URL("../../fixtures/children/scripted-child.mjs", import.meta.url));

interface Harness {
  sup: ChildSupervisor;
  logs: string[];
  exits: ChildExit[];
  /** Date.now() of every spawn. */
  spawns: number[];
  messages: unknown[];
}

const running: ChildSupervisor[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

/** A supervisor over the scripted child; `mode(n)` says how the n-th start (0-based) behaves. */
function supervise(over: Partial<SupervisorOptions> = {}, mode: (n: number) => string = () => "ready"): Harness {
  const logger = createMemoryLogger();
  const spawns: number[] = [];
  const exits: ChildExit[] = [];
  const messages: unknown[] = [];
  const sup = new ChildSupervisor({
    name: "toy-0.1b",
    label: "the toy model toy-0.1b",
    logger,
    spawn: () => {
      const n = spawns.length;
      spawns.push(Date.now());
      return fork(SCRIPT, [mode(n)], {execArgv: [], stdio: ["ignore", "ignore", "pipe", "ipc"]});
    },
    isReady: (m) => (m as {type?: string}).type === "ready",
    health: {intervalMs: 60_000, timeoutMs: 1000, ping: (seq) => ({type: "ping", seq}),
      pong: (m) => ((m as {type?: string}).type === "pong" ? (m as {seq: number}).seq : null)},
    ...over,
  });
  sup.onExit((e) => exits.push(e));
  sup.onMessage((m) => messages.push(m));
  running.push(sup);
  return {sup, logs: logger.lines, exits, spawns, messages};
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

/** Kills the current process from outside, as an operator or the OOM killer would, and waits for its exit to be seen. */
async function killFromOutside(h: Harness): Promise<void> {
  const before = h.exits.length;
  process.kill(h.sup.status().pid!, "SIGKILL");
  await until("the exit is seen", () => h.exits.length > before);
}

describe("child supervisor", () => {
  test("starts the child, reports it ready, forwards its messages but not its pongs", async () => {
    const h = supervise({health: {intervalMs: 20, timeoutMs: 1000, ping: (seq) => ({type: "ping", seq}),
      pong: (m) => ((m as {type?: string}).type === "pong" ? (m as {seq: number}).seq : null)}});
    assert.equal(h.sup.status().state, "stopped");
    await h.sup.start();
    const st = h.sup.status();
    assert.deepEqual({...st, pid: typeof st.pid}, {name: "toy-0.1b", state: "ready", pid: "number", restarts: 0, crashes: 0, last_exit: null,
      last_restart_at: null});
    const child = await h.sup.whenReady(1000);
    child.send({type: "work", id: 1});
    await until("the work is answered", () => h.messages.length > 0);
    await sleep(100);
    assert.deepEqual(h.messages, [{type: "done", id: 1}], "pings were answered, and their pongs kept by the supervisor");
    assert.equal(h.sup.status().state, "ready");
    assert.match(h.logs.join("\n"), /info child ready child=toy-0.1b pid=\d+ ms=\d+/);
  });

  test("a child killed from outside: work in it gets a 503 error naming the model, and it is restarted at once", async () => {
    const h = supervise();
    await h.sup.start();
    const firstPid = h.sup.status().pid;
    await killFromOutside(h);
    const exit = h.exits[0]!;
    assert.deepEqual([exit.next, exit.planned, exit.reason], ["restart", false, "killed by SIGKILL"]);
    const err = exit.error("toying");
    assert.ok(err instanceof EngineRestartingError);
    assert.match(err.message, /^the toy model toy-0.1b stopped while toying \(killed by SIGKILL\); it is being restarted; retry in \d+ s$/);
    assert.ok(err.retryAfterS >= 1);
    await h.sup.whenReady(5000);
    const st = h.sup.status();
    assert.equal(st.state, "ready");
    assert.notEqual(st.pid, firstPid);
    assert.deepEqual([st.restarts, st.crashes, st.last_exit], [1, 1, "killed by SIGKILL"]);
    assert.ok(Date.parse(st.last_restart_at!) <= Date.now());
    assert.ok(h.spawns[1]! - h.spawns[0]! < 5000);
    assert.match(h.logs.join("\n"), /warn child died; restarting child=toy-0.1b reason="killed by SIGKILL" in_ms=0 failures_in_a_row=1/);
  });

  test("crashes in a row back off: at once, then base, doubling to the cap; the exit code and stderr are in last_exit", async () => {
    const h = supervise({backoff: {firstMs: 0, baseMs: 150, maxMs: 400, resetAfterMs: 60_000}, maxFailures: 10});
    await h.sup.start();
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const child = await h.sup.whenReady(5000);
      const diedAt = Date.now();
      child.send({type: "crash", code: 3});
      await until("the next start", () => h.spawns.length === i + 2);
      delays.push(h.spawns[i + 1]! - diedAt);
      if (i === 1) assert.equal(h.sup.status().state, "restarting");
    }
    await h.sup.whenReady(5000);
    // Expected 0, 150, 300, 400 (capped); each measured from the crash command, so a little later.
    const expected = [0, 150, 300, 400];
    delays.forEach((d, i) => assert.ok(d >= expected[i]! && d < expected[i]! + 250, `delay ${i}: ${d} ms, expected about ${expected[i]}`));
    const st = h.sup.status();
    assert.deepEqual([st.restarts, st.crashes, st.state], [4, 4, "ready"]);
    assert.equal(st.last_exit, "exit code 3 (scripted-child: crashing on request)");
  });

  test("a child that stayed up for resetAfterMs has its run of failures forgotten", async () => {
    const h = supervise({backoff: {firstMs: 0, baseMs: 2000, maxMs: 4000, resetAfterMs: 200}});
    await h.sup.start();
    await killFromOutside(h);
    await h.sup.whenReady(5000);
    await sleep(300);
    const diedAt = Date.now();
    await killFromOutside(h);
    await until("the third start", () => h.spawns.length === 3);
    assert.ok(h.spawns[2]! - diedAt < 1000, "restarted at once, not after baseMs");
    assert.match(h.logs.join("\n"), /in_ms=0 failures_in_a_row=1\n[^\n]*child ready[^\n]*\n[^\n]*in_ms=0 failures_in_a_row=1/);
  });

  test("past maxFailures in a row it gives up (failed, a 500 naming why); a request then tries one fresh start", async () => {
    const h = supervise({backoff: {firstMs: 0, baseMs: 10, maxMs: 10, resetAfterMs: 60_000}, maxFailures: 2});
    await h.sup.start();
    for (let i = 0; i < 3; i++) {
      await h.sup.whenReady(5000);
      await killFromOutside(h);
    }
    assert.deepEqual(h.exits.map((e) => e.next), ["restart", "restart", "failed"]);
    const st = h.sup.status();
    assert.deepEqual([st.state, st.pid, st.restarts, st.crashes], ["failed", null, 2, 3]);
    const err = h.exits[2]!.error("toying");
    assert.ok(err instanceof ChildFailedError);
    assert.equal(err.message, "the toy model toy-0.1b stopped while toying and is not restarted: killed by SIGKILL");
    assert.throws(() => h.sup.readyChild(), /toy-0.1b is not running and is not restarted: killed by SIGKILL/);
    assert.match(h.logs.join("\n"), /error child failed; not restarting child=toy-0.1b reason="killed by SIGKILL" failures_in_a_row=3/);
    await h.sup.whenReady(5000);
    assert.deepEqual([h.sup.status().state, h.sup.status().restarts], ["ready", 3]);
  });

  test("an exit marked fatal fails at once and is not started again", async () => {
    const h = supervise({fatal: (_code, signal) => signal === "SIGKILL"});
    await h.sup.start();
    await killFromOutside(h);
    assert.equal(h.exits[0]!.next, "failed");
    await sleep(100);
    assert.equal(h.spawns.length, 1);
    await assert.rejects(h.sup.whenReady(1000), (e: Error) => e instanceof ChildFailedError && /killed by SIGKILL/.test(e.message));
  });

  test("a planned stop (a hang-up) restarts at once, logged at info: a restart, not a crash, and the backoff is not advanced", async () => {
    const h = supervise({backoff: {firstMs: 0, baseMs: 3000, maxMs: 3000, resetAfterMs: 60_000}});
    await h.sup.start();
    await killFromOutside(h);
    await h.sup.whenReady(5000);
    const release = h.sup.busy();
    h.sup.kill("its client hung up mid-window");
    release();
    await until("the planned exit", () => h.exits.length === 2);
    assert.deepEqual([h.exits[1]!.planned, h.exits[1]!.next], [true, "restart"]);
    const started = Date.now();
    await h.sup.whenReady(5000);
    assert.ok(Date.now() - started < 2500, "not held back by the crash before it");
    const st = h.sup.status();
    assert.deepEqual([st.restarts, st.crashes], [2, 1]);
    assert.equal(st.last_exit, "stopped on purpose (its client hung up mid-window): killed by SIGKILL");
    assert.match(h.logs.join("\n"), /info child stopped on purpose; restarting child=toy-0.1b why="its client hung up mid-window"/);
  });

  test("an idle child that does not answer its health check is killed and restarted; a busy one is not asked", async () => {
    const h = supervise({health: {intervalMs: 40, timeoutMs: 150, ping: (seq) => ({type: "ping", seq}),
      pong: (m) => ((m as {type?: string}).type === "pong" ? (m as {seq: number}).seq : null)}});
    await h.sup.start();
    const child = await h.sup.whenReady(1000);
    const release = h.sup.busy();
    child.send({type: "mute"});
    await sleep(500);
    assert.deepEqual([h.exits.length, h.sup.status().state], [0, "ready"], "not pinged while busy");
    release();
    await until("the failed check's exit", () => h.exits.length === 1, 3000);
    await h.sup.whenReady(5000);
    const st = h.sup.status();
    assert.deepEqual([st.restarts, st.crashes], [1, 1]);
    assert.equal(st.last_exit, "it did not answer a health check within 150 ms; killed by SIGKILL");
    assert.match(h.logs.join("\n"), /warn child did not answer a health check; killing it child=toy-0.1b/);
  });

  test("a first start that fails rejects with the exit and the child's stderr, and is not retried", async () => {
    const h = supervise({}, () => "die");
    await assert.rejects(h.sup.start(), (e: Error) => e instanceof ChildFailedError &&
      e.message === "the toy model toy-0.1b could not start: exit code 7 (scripted-child: told to die at start)");
    assert.equal(h.sup.status().state, "failed");
    await sleep(100);
    assert.equal(h.spawns.length, 1);
  });

  test("a start that never says ready is killed at readyTimeoutMs", async () => {
    const h = supervise({readyTimeoutMs: 300}, () => "silent");
    await assert.rejects(h.sup.start(), (e: Error) => e instanceof ChildFailedError &&
      e.message === "the toy model toy-0.1b could not start: it did not say ready within 0.3 s; killed by SIGKILL");
  });

  test("a restart that fails before ready counts as a failure and backs off", async () => {
    const h = supervise({backoff: {firstMs: 0, baseMs: 100, maxMs: 100, resetAfterMs: 60_000}}, (n) => (n === 1 ? "die" : "ready"));
    await h.sup.start();
    await killFromOutside(h);
    await until("the third start", () => h.spawns.length === 3);
    await h.sup.whenReady(5000);
    assert.deepEqual([h.sup.status().restarts, h.sup.status().crashes], [2, 2]);
    assert.ok(h.spawns[2]! - h.spawns[1]! >= 100);
  });

  test("a request arriving while it restarts waits for ready, bounded: past the bound a 503 with the time left", async () => {
    const h = supervise({backoff: {firstMs: 4000, baseMs: 4000, maxMs: 4000, resetAfterMs: 60_000}});
    await h.sup.start();
    await killFromOutside(h);
    assert.equal(h.sup.status().state, "restarting");
    await assert.rejects(h.sup.whenReady(100), (e: Error) => e instanceof EngineRestartingError && e.retryAfterS >= 4 &&
      /^the toy model toy-0.1b is restarting \(killed by SIGKILL\) and was not ready within 0.1 s; retry in \d s$/.test(e.message));
    assert.throws(() => h.sup.readyChild(), (e: Error) => e instanceof EngineRestartingError && /is restarting \(killed by SIGKILL\)/.test(e.message));
    const ac = new AbortController();
    const waiting = h.sup.whenReady(10_000, ac.signal);
    ac.abort(new Error("client gone"));
    await assert.rejects(waiting, /client gone/);
  });

  test("stop: an idle child is disconnected and exits; no restart follows; work waiting is refused", async () => {
    const h = supervise();
    await h.sup.start();
    const child = await h.sup.whenReady(1000);
    await h.sup.stop();
    assert.equal(child.exitCode, 0);
    assert.deepEqual([h.sup.status().state, h.exits[0]!.next, h.exits[0]!.planned], ["stopped", "stopped", true]);
    await sleep(100);
    assert.equal(h.spawns.length, 1);
    await assert.rejects(h.sup.whenReady(1000), /is stopped: the server is shutting down/);
  });

  test("stop: a child that ignores the disconnect is killed after the grace; a busy one at once", async () => {
    const stubborn = supervise({stopGraceMs: 200}, () => "stubborn");
    await stubborn.sup.start();
    const child = await stubborn.sup.whenReady(1000);
    const started = Date.now();
    await stubborn.sup.stop();
    assert.equal(child.signalCode, "SIGKILL");
    assert.ok(Date.now() - started >= 190);
    const busy = supervise({stopGraceMs: 10_000});
    await busy.sup.start();
    const working = await busy.sup.whenReady(1000);
    busy.sup.busy();
    const t = Date.now();
    await busy.sup.stop();
    assert.equal(working.signalCode, "SIGKILL");
    assert.ok(Date.now() - t < 2000);
  });

  test("no process 'exit' listener is left behind by children that came and went", async () => {
    const before = process.listenerCount("exit");
    const h = supervise();
    await h.sup.start();
    assert.equal(process.listenerCount("exit"), before + 1);
    await killFromOutside(h);
    await h.sup.whenReady(5000);
    assert.equal(process.listenerCount("exit"), before + 1);
    await h.sup.stop();
    assert.equal(process.listenerCount("exit"), before);
  });

  test("the registry lists each child's status", async () => {
    const registry = new ChildRegistry();
    const a = supervise({name: "a"});
    const b = supervise({name: "b"});
    registry.add(a.sup);
    registry.add(b.sup);
    await a.sup.start();
    assert.deepEqual(registry.list().map((s) => [s.name, s.state]), [["a", "ready"], ["b", "stopped"]]);
  });
});

/** A child that is a server, with no IPC channel (as llama-server is): it listens, and answers /health while not told otherwise. */
const HTTP_CHILD = `
const {createServer} = require("node:http");
let healthy = true;
createServer((req, res) => {
  if (req.url === "/sick") healthy = false;
  res.statusCode = healthy ? 200 : 503;
  res.end();
}).listen(Number(process.argv[1]), "127.0.0.1");
`;

describe("a server child (no IPC channel: ready and healthy by its answers)", () => {
  async function serverChild() {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as {port: number}).port;
        s.close(() => resolve(p));
      });
    });
    const url = `http://127.0.0.1:${port}`;
    const answers = async (signal: AbortSignal) => {
      try {
        const res = await fetch(`${url}/health`, {signal});
        return res.ok;
      } catch {
        return false;
      }
    };
    const h = supervise({isReady: undefined, probeReady: {ready: answers, pollMs: 20},
      health: {check: answers, intervalMs: 50, timeoutMs: 1000},
      spawn: () => spawn(process.execPath, ["-e", HTTP_CHILD, String(port)], {stdio: ["ignore", "ignore", "pipe"]})});
    return {h, url};
  }

  test("ready once it answers; killed from outside, it is restarted and answers again", async () => {
    const {h, url} = await serverChild();
    await h.sup.start();
    assert.equal(h.sup.status().state, "ready");
    assert.equal((await fetch(`${url}/health`)).status, 200);
    await killFromOutside(h);
    await h.sup.whenReady(5000);
    assert.equal(h.sup.status().restarts, 1);
    assert.equal((await fetch(`${url}/health`)).status, 200);
  });

  test("a failed health check kills it and it restarts healthy", async () => {
    const {h, url} = await serverChild();
    await h.sup.start();
    await fetch(`${url}/sick`);
    await until("the restart after the failed check", () => h.sup.status().restarts === 1 && h.sup.status().state === "ready");
    assert.match(h.sup.status().last_exit ?? "", /health check failed/);
    assert.equal((await fetch(`${url}/health`)).status, 200);
  });
});

describe("childScript", () => {
  test("from source: the .ts sibling, run through tsx by absolute URL", () => {
    const s = childScript("file:///srv/svc/src/side-models/speech/whisper-engine.ts", "whisper-child");
    assert.equal(s.path, "/srv/svc/src/side-models/speech/whisper-child.ts");
    assert.equal(s.execArgv[0], "--import");
    assert.match(s.execArgv[1]!, /^file:\/\/.*tsx/);
  });
  test("from a build: the .js sibling, no loader", () => {
    assert.deepEqual(childScript("file:///srv/svc/dist/side-models/speech/whisper-engine.js", "whisper-child"),
      {path: "/srv/svc/dist/side-models/speech/whisper-child.js", execArgv: []});
  });
});
