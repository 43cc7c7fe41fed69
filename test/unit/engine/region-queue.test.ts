// Region leases: lowest free id first, strict FIFO for waiters, busy (503 with Retry-After) on timeout, cancelled (499) on
// abort, and the wait clock.

import assert from "node:assert/strict";
import {afterEach, describe, test} from "node:test";
import {toApiError} from "../../../src/api/error-body.ts";
import {EngineBusyError, EngineCancelledError} from "../../../src/engine/errors.ts";
import {RegionQueue} from "../../../src/engine/region-queue.ts";

// Every waiter gets a signal that is aborted after its test, so no queue timer outlives the test.
const controllers: AbortController[] = [];
const never = () => {
  const ac = new AbortController();
  controllers.push(ac);
  return ac.signal;
};
afterEach(() => {
  for (const ac of controllers.splice(0)) ac.abort();
});
const LONG = 60_000;

/** Settles on the next macrotask so pending promise callbacks have run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

function track(p: Promise<number>) {
  const s: {value?: number; error?: unknown} = {};
  p.then((v) => (s.value = v), (e) => (s.error = e));
  return s;
}

describe("RegionQueue", () => {
  test("grants the lowest free id", async () => {
    const q = new RegionQueue(3);
    assert.equal(q.size, 3);
    assert.deepEqual([await q.acquire({signal: never(), timeoutMs: LONG}), await q.acquire({signal: never(), timeoutMs: LONG}), await q.acquire({signal: never(), timeoutMs: LONG})], [0, 1, 2]);
    assert.deepEqual([q.isBusy(0), q.isBusy(1), q.isBusy(2)], [true, true, true]);
    q.release(1);
    assert.equal(q.isBusy(1), false);
    q.release(0);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 0);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 1);
    assert.equal(q.queued, 0);
  });

  test("waiters are served in arrival order, each getting the released region", async () => {
    const q = new RegionQueue(1);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 0);
    const order: string[] = [];
    const ps = ["a", "b", "c"].map((name) => q.acquire({signal: never(), timeoutMs: LONG}).then((id) => order.push(`${name}:${id}`)));
    assert.equal(q.queued, 3);
    await settle();
    assert.deepEqual(order, []);
    q.release(0);
    await settle();
    assert.deepEqual(order, ["a:0"]);
    assert.equal(q.queued, 2);
    assert.equal(q.isBusy(0), true);
    q.release(0);
    await settle();
    q.release(0);
    await Promise.all(ps);
    assert.deepEqual(order, ["a:0", "b:0", "c:0"]);
    assert.equal(q.queued, 0);
    q.release(0);
    assert.equal(q.isBusy(0), false);
  });

  test("with two regions busy, the first waiter gets whichever is released", async () => {
    const q = new RegionQueue(2);
    await q.acquire({signal: never(), timeoutMs: LONG});
    await q.acquire({signal: never(), timeoutMs: LONG});
    const w1 = track(q.acquire({signal: never(), timeoutMs: LONG}));
    const w2 = track(q.acquire({signal: never(), timeoutMs: LONG}));
    q.release(1);
    await settle();
    assert.deepEqual([w1.value, w2.value], [1, undefined]);
    q.release(0);
    await settle();
    assert.deepEqual([w1.value, w2.value], [1, 0]);
  });

  test("a new request queues behind earlier waiters", async () => {
    const q = new RegionQueue(1);
    await q.acquire({signal: never(), timeoutMs: LONG});
    const first = track(q.acquire({signal: never(), timeoutMs: LONG}));
    q.release(0);
    const second = track(q.acquire({signal: never(), timeoutMs: LONG}));
    await settle();
    assert.equal(first.value, 0);
    assert.equal(second.value, undefined);
    assert.equal(q.queued, 1);
    q.release(0);
    await settle();
    assert.equal(second.value, 0);
  });

  test("timeout: 503 engine_busy with Retry-After, and the waiter leaves the queue", async (t) => {
    t.mock.timers.enable({apis: ["setTimeout"]});
    const q = new RegionQueue(1);
    await q.acquire({signal: never(), timeoutMs: LONG});
    const w = track(q.acquire({signal: never(), timeoutMs: 2500}));
    const other = track(q.acquire({signal: never(), timeoutMs: LONG}));
    assert.equal(q.queued, 2);
    t.mock.timers.tick(2499);
    await settle();
    assert.equal(w.error, undefined);
    t.mock.timers.tick(1);
    await settle();
    const raw: unknown = w.error;
    assert.ok(raw instanceof EngineBusyError, "the engine throws its own error; the API maps it");
    const err = toApiError(raw);
    assert.equal(err.kind, "engine_busy");
    assert.equal(err.status, 503);
    assert.equal(err.code, "engine_busy");
    assert.deepEqual(err.headers, {"Retry-After": "3"});
    assert.equal(err.message, "all regions are busy and the request could not start within SVC_QUEUE_TIMEOUT (3 s); retry later");
    assert.equal(q.queued, 1);
    q.release(0);
    await settle();
    assert.equal(other.value, 0);
  });

  test("a sub-second timeout still says Retry-After: 1", async () => {
    const q = new RegionQueue(1);
    await q.acquire({signal: never(), timeoutMs: LONG});
    await assert.rejects(q.acquire({signal: never(), timeoutMs: 20}), (err: unknown) => {
      assert.ok(err instanceof EngineBusyError);
      assert.equal(err.retryAfterS, 1);
      const mapped = toApiError(err);
      assert.deepEqual([mapped.status, mapped.headers], [503, {"Retry-After": "1"}]);
      assert.equal(mapped.message, "all regions are busy and the request could not start within SVC_QUEUE_TIMEOUT (1 s); retry later");
      return true;
    });
    assert.equal(q.queued, 0);
  });

  test("abort while waiting: client_closed, the waiter is removed, the next one is served", async () => {
    const q = new RegionQueue(1);
    await q.acquire({signal: never(), timeoutMs: LONG});
    const ac = new AbortController();
    const a = track(q.acquire({signal: ac.signal, timeoutMs: LONG}));
    const b = track(q.acquire({signal: never(), timeoutMs: LONG}));
    assert.equal(q.queued, 2);
    ac.abort();
    await settle();
    assert.equal(q.queued, 1);
    assert.ok(a.error instanceof EngineCancelledError);
    const mapped = toApiError(a.error);
    assert.equal(mapped.kind, "client_closed");
    assert.equal(mapped.status, 499);
    assert.equal(mapped.message, "the client closed the connection while the request waited for a region");
    q.release(0);
    await settle();
    assert.equal(b.value, 0);
    assert.equal(a.value, undefined);
  });

  test("an already-aborted signal is refused at once, even with a free region", async () => {
    const q = new RegionQueue(2);
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(q.acquire({signal: ac.signal, timeoutMs: LONG}), (err: unknown) => err instanceof EngineCancelledError && toApiError(err).kind === "client_closed");
    assert.deepEqual([q.isBusy(0), q.isBusy(1), q.queued], [false, false, 0]);
  });

  test("longestWaitS uses the injected clock and follows the head of the queue", async () => {
    let now = 1000;
    const q = new RegionQueue(1, () => now);
    assert.equal(q.longestWaitS(), 0);
    await q.acquire({signal: never(), timeoutMs: LONG});
    assert.equal(q.longestWaitS(), 0);
    const a = track(q.acquire({signal: never(), timeoutMs: LONG}));
    now = 2000;
    track(q.acquire({signal: never(), timeoutMs: LONG}));
    now = 3500;
    assert.equal(q.longestWaitS(), 2.5);
    q.release(0);
    await settle();
    assert.equal(a.value, 0);
    assert.equal(q.longestWaitS(), 1.5);
  });

  test("release is idempotent: releasing a free region (twice, or never acquired) changes nothing", async () => {
    const q = new RegionQueue(2);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 0);
    q.release(0);
    q.release(0);
    q.release(1);
    q.release(7);
    assert.deepEqual([q.isBusy(0), q.isBusy(1)], [false, false]);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 0);
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 1);
    const w = track(q.acquire({signal: never(), timeoutMs: LONG}));
    q.release(5);
    await settle();
    assert.equal(w.value, undefined);
    assert.equal(q.queued, 1);
    q.release(1);
    await settle();
    assert.equal(w.value, 1);
  });
});

describe("take (a remote replica's slots parked while it is down)", () => {
  test("marks a free region busy without a request; a busy one is refused; release hands it on as usual", async () => {
    const q = new RegionQueue(2);
    assert.equal(q.take(0), true);
    assert.equal(q.isBusy(0), true);
    assert.equal(q.take(0), false, "already busy");
    assert.equal(q.take(5), false, "no such region");
    assert.equal(await q.acquire({signal: never(), timeoutMs: LONG}), 1);
    const waiting = track(q.acquire({signal: never(), timeoutMs: LONG}));
    await settle();
    assert.equal(waiting.value, undefined);
    q.release(0);
    await settle();
    assert.equal(waiting.value, 0, "the parked region went to the waiter when given back");
  });
});
