// The side-model executor: passes run one at a time in arrival order; a pass that cannot start within the
// timeout is refused 503 engine_busy with Retry-After; a hang-up withdraws a waiting pass; status tells
// passes waiting on the device (up to the queue limit) from those waiting in the server.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {toApiError} from "../../../src/api/error-body.ts";
import {EngineBusyError} from "../../../src/engine/errors.ts";
import {SideExecutor} from "../../../src/side-models/executor.ts";

/** A pass the test finishes by hand, recording when it started. */
function gate(log: string[], name: string) {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return {
    pass: async () => {
      log.push(`start ${name}`);
      await opened;
      log.push(`end ${name}`);
      return name;
    },
    open,
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("SideExecutor", () => {
  test("runs passes one at a time, in arrival order", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const log: string[] = [];
    const gates = ["a", "b", "c", "d"].map((n) => gate(log, n));
    const results = gates.map((g) => ex.run(g.pass));
    await tick();
    assert.deepEqual(log, ["start a"], "only the first pass runs while it is not finished");
    // Finish them out of order: the next one starts only after the running one ends.
    gates[2]!.open();
    gates[1]!.open();
    await tick();
    assert.deepEqual(log, ["start a"], "opening later passes does not start them");
    gates[0]!.open();
    gates[3]!.open();
    assert.deepEqual(await Promise.all(results), ["a", "b", "c", "d"]);
    assert.deepEqual(log, ["start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"]);
    const st = ex.status();
    assert.equal(st.passes, 4);
    assert.equal(st.running, false);
    assert.equal(st.queued, 0);
  });

  test("a failing pass frees the device for the next", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const first = ex.run(async () => {
      throw new Error("boom");
    });
    const second = ex.run(async () => "ok");
    await assert.rejects(first, /boom/);
    assert.equal(await second, "ok");
  });

  test("a pass that cannot start within the timeout gets 503 engine_busy with Retry-After", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 50});
    const log: string[] = [];
    const long = gate(log, "long");
    const running = ex.run(long.pass);
    const refusedPass = ex.run(async () => "never");
    const raw = await refusedPass.then(() => assert.fail("the waiting pass ran"), (e: unknown) => e);
    assert.ok(raw instanceof EngineBusyError);
    const err = toApiError(raw);
    assert.equal(err.status, 503);
    assert.equal(err.code, "engine_busy");
    assert.equal(err.headers["Retry-After"], "1", "whole seconds, at least 1");
    assert.match(err.message, /SVC_QUEUE_TIMEOUT/);
    assert.equal(ex.status().refused, 1);
    long.open();
    assert.equal(await running, "long");
    // The refused pass never ran, and the device is free again.
    assert.deepEqual(log, ["start long", "end long"]);
    assert.equal(await ex.run(async () => "next"), "next");
  });

  test("an unbounded pass (the next step of a reply under way) waits past the timeout instead of being refused", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 20});
    const log: string[] = [];
    const first = gate(log, "first");
    const running = ex.run(first.pass);
    const bounded = assert.rejects(ex.run(async () => "bounded"), (err: unknown) => err instanceof EngineBusyError && toApiError(err).status === 503);
    const unbounded = ex.run(async () => "unbounded", undefined, {unbounded: true});
    await new Promise((r) => setTimeout(r, 60));
    await bounded;
    first.open();
    assert.equal(await running, "first");
    assert.equal(await unbounded, "unbounded", "the continuing pass ran once the device was free, 3x past the timeout");
    assert.equal(ex.status().refused, 1);
  });

  test("Retry-After rounds the timeout up to whole seconds", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 1_001});
    const hold = gate([], "hold");
    const held = ex.run(hold.pass);
    const refused = await ex.run(async () => "y").catch((e: unknown) => e);
    assert.ok(refused instanceof EngineBusyError);
    assert.equal(toApiError(refused).headers["Retry-After"], "2");
    hold.open();
    await held;
  });

  test("an abort withdraws a waiting pass; the passes behind it move up", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const log: string[] = [];
    const a = gate(log, "a");
    const ra = ex.run(a.pass);
    const ac = new AbortController();
    const rb = ex.run(async () => {
      log.push("b ran");
      return "b";
    }, ac.signal);
    const rc = ex.run(async () => {
      log.push("c ran");
      return "c";
    });
    await tick();
    assert.equal(ex.status().queued, 2);
    ac.abort(new Error("client left"));
    await assert.rejects(rb, /client left/);
    assert.equal(ex.status().queued, 1, "the withdrawn pass no longer waits");
    a.open();
    assert.equal(await ra, "a");
    assert.equal(await rc, "c");
    assert.deepEqual(log, ["start a", "end a", "c ran"]);
    assert.equal(ex.status().refused, 0, "a withdrawal is not a refusal");
  });

  test("an already aborted signal is refused at once, without running", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000});
    const ac = new AbortController();
    ac.abort(new Error("gone"));
    let ran = false;
    await assert.rejects(ex.run(async () => {
      ran = true;
    }, ac.signal), /gone/);
    assert.equal(ran, false);
    assert.equal(ex.status().passes, 0);
  });

  test("status counts passes waiting on the device up to queueLimit, the rest as waiting in the server", async () => {
    const ex = new SideExecutor({queueLimit: 2, timeoutMs: 10_000});
    const log: string[] = [];
    const g = ["r", "w1", "w2", "w3", "w4"].map((n) => gate(log, n));
    const runs = g.map((x) => ex.run(x.pass));
    await tick();
    let st = ex.status();
    assert.equal(st.running, true);
    assert.equal(st.queued, 2, "at most SVC_NPU_QUEUE passes wait on the device");
    assert.equal(st.waitingInServer, 2, "the rest wait in the server, not refused");
    assert.ok(st.longestWaitS >= 0);
    for (const x of g) x.open();
    await Promise.all(runs);
    st = ex.status();
    assert.deepEqual([st.running, st.queued, st.waitingInServer, st.longestWaitS, st.passes, st.refused], [false, 0, 0, 0, 5, 0]);
  });
});

describe("SideExecutor beside a busy main model", () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  test("while the main model is busy, the next pass starts no sooner than the last one took after it ended", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000, mainBusy: () => true});
    const spans: {start: number; end: number}[] = [];
    const pass = async () => {
      const start = performance.now();
      await sleep(40);
      spans.push({start, end: performance.now()});
    };
    await Promise.all([ex.run(pass), ex.run(pass), ex.run(pass)]);
    assert.equal(spans.length, 3);
    // Lower bounds only (a timer never fires early; a busy machine only makes the gap longer); 1 ms for clock rounding.
    for (let i = 1; i < spans.length; i++) {
      const took = spans[i - 1]!.end - spans[i - 1]!.start;
      assert.ok(spans[i]!.start - spans[i - 1]!.end >= took - 1, `pause ${spans[i]!.start - spans[i - 1]!.end} ms after a ${took} ms pass`);
    }
  });

  test("with the main model idle, the next pass starts as soon as the last one ends", async () => {
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000, mainBusy: () => false});
    const log: string[] = [];
    const a = gate(log, "a");
    const b = gate(log, "b");
    const ra = ex.run(a.pass);
    void ex.run(b.pass);
    a.open();
    await ra;
    await tick();
    assert.deepEqual(log, ["start a", "end a", "start b"]);
    b.open();
  });

  test("a pass's result is returned before its pause, and the executor stays taken during the pause", async () => {
    let busy = true;
    const ex = new SideExecutor({queueLimit: 64, timeoutMs: 10_000, mainBusy: () => busy});
    const log: string[] = [];
    const a = gate(log, "a");
    const b = gate(log, "b");
    const ra = ex.run(a.pass);
    void ex.run(b.pass);
    await tick();
    await sleep(30); // the pass takes at least 30 ms, so its pause does too
    a.open();
    assert.equal(await ra, "a");
    await tick();
    assert.deepEqual(log, ["start a", "end a"], "b waits out the pause");
    assert.equal(ex.status().running, true);
    busy = false;
    for (let i = 0; i < 200 && log.length < 3; i++) await sleep(5);
    assert.deepEqual(log, ["start a", "end a", "start b"]);
    b.open();
  });
});
