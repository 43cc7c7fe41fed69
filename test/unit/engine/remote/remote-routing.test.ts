// The remote engine's pure parts: which replica and slot a request goes to (router.ts), and the recovery of
// token ids llama-server held back inside a UTF-8 character (token-gaps.ts).

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {chooseReplica, chooseSlot, type ReplicaView} from "../../../../src/engine/remote/router.ts";
import {heldBackBytes, TokenByteIndex} from "../../../../src/engine/remote/token-gaps.ts";

const view = (index: number, expected: number, free: number[], busy: number, up = true): ReplicaView => ({index, up, busy, free, expected});

describe("chooseReplica (prefix mode)", () => {
  test("the replica holding the longest prefix wins while it has a free slot", () => {
    assert.deepEqual(chooseReplica([view(0, 10, [0], 1), view(1, 300, [2], 1), view(2, 40, [4, 5], 0)], "prefix", 0, 100),
      {replica: 1, reason: "prefix", expected: 300});
  });
  test("equal prefixes: the less busy holder", () => {
    assert.equal(chooseReplica([view(0, 50, [0], 1), view(1, 50, [2, 3], 0)], "prefix", 0, 100)!.replica, 1);
  });
  test("the holder without a free slot is overloaded: the least loaded open replica takes it", () => {
    assert.deepEqual(chooseReplica([view(0, 500, [], 2), view(1, 0, [3], 1), view(2, 20, [4, 5], 0)], "prefix", 0, 100),
      {replica: 2, reason: "overloaded", expected: 20});
  });
  test("a prefix under half the prompt (a template header every chat shares) does not decide: least loaded", () => {
    assert.deepEqual(chooseReplica([view(0, 49, [0], 1), view(1, 0, [2, 3], 0)], "prefix", 0, 100), {replica: 1, reason: "least_loaded", expected: 0});
    assert.deepEqual(chooseReplica([view(0, 50, [0], 1), view(1, 0, [2, 3], 0)], "prefix", 0, 100), {replica: 0, reason: "prefix", expected: 50});
  });
  test("nobody holds anything: least loaded, ties taken in turn", () => {
    const views = [view(0, 0, [0, 1], 0), view(1, 0, [2, 3], 0)];
    assert.deepEqual(chooseReplica(views, "prefix", 0, 100), {replica: 0, reason: "least_loaded", expected: 0});
    assert.equal(chooseReplica(views, "prefix", 1, 100)!.replica, 1);
    assert.equal(chooseReplica([view(0, 0, [1], 1), view(1, 0, [2, 3], 0)], "prefix", 0, 100)!.replica, 1);
  });
  test("a dead replica is never chosen, even holding the longest prefix; none open gives null", () => {
    assert.deepEqual(chooseReplica([view(0, 900, [0, 1], 0, false), view(1, 5, [2], 1)], "prefix", 0, 8), {replica: 1, reason: "prefix", expected: 5});
    assert.equal(chooseReplica([view(0, 9, [0], 0, false), view(1, 5, [], 2)], "prefix", 0, 100), null);
  });
});

describe("chooseReplica (round-robin)", () => {
  test("takes live replicas in turn, skipping full ones, whatever they hold", () => {
    const views = [view(0, 900, [0], 1), view(1, 0, [2], 1), view(2, 0, [], 2)];
    assert.deepEqual([0, 1, 2, 3, 4].map((r) => chooseReplica(views, "round-robin", r, 100)!.replica), [0, 1, 0, 0, 1]);
    assert.equal(chooseReplica(views, "round-robin", 1, 100)!.reason, "round_robin");
  });
});

describe("chooseReplica with a named session's replica", () => {
  test("the session's replica takes the request while it has a free slot, even when another holds a longer prefix", () => {
    const views = [view(0, 900, [0], 1), view(1, 10, [2], 1)];
    assert.deepEqual(chooseReplica(views, "prefix", 0, 1000, 1), {replica: 1, reason: "session", expected: 10});
    assert.deepEqual(chooseReplica(views, "round-robin", 0, 1000, 1), {replica: 1, reason: "session", expected: 10});
  });

  test("a session replica that is full or down: routed as any other request", () => {
    const full = [view(0, 900, [0], 1), view(1, 950, [], 2)];
    assert.deepEqual(chooseReplica(full, "prefix", 0, 1000, 1), {replica: 0, reason: "overloaded", expected: 900});
    const down = [view(0, 0, [0], 1), {...view(1, 0, [2], 0), up: false}];
    assert.deepEqual(chooseReplica(down, "prefix", 0, 1000, 1), {replica: 0, reason: "least_loaded", expected: 0});
  });
});

describe("chooseSlot", () => {
  test("the free slot sharing the longest prefix; ties: the least recently used", () => {
    const prompt = [1, 2, 3, 4];
    assert.equal(chooseSlot([{region: 0, held: [1, 2, 9], lastUsed: 1}, {region: 1, held: [1, 2, 3], lastUsed: 5}], prompt).region, 1);
    assert.equal(chooseSlot([{region: 0, held: [7], lastUsed: 9}, {region: 1, held: [], lastUsed: 3}], prompt).region, 1);
  });
});

describe("held-back tokens", () => {
  // A toy byte vocabulary: ids 0..255 are single bytes, 256 = [0xF0, 0x9F], 257 = [0x9A, 0x80], 258 = " hi", 259 = special.
  const enc = new TextEncoder();
  const table: Uint8Array[] = [];
  for (let b = 0; b < 256; b++) table.push(Uint8Array.of(b));
  table.push(Uint8Array.of(0xf0, 0x9f), Uint8Array.of(0x9a, 0x80), enc.encode(" hi"), enc.encode("<|end|>"));
  const index = new TokenByteIndex(table.length, (t) => table[t]!, (t) => t === 259);

  test("content minus the streamed token's bytes is what the held tokens wrote", () => {
    const rocket = "🚀"; // F0 9F 9A 80
    const held = heldBackBytes(`${rocket} hi`, enc.encode(" hi"));
    assert.deepEqual([...held!], [0xf0, 0x9f, 0x9a, 0x80]);
    assert.equal(heldBackBytes("abc", enc.encode("xyz")), null);
  });
  test("split finds exactly `count` tokens, longest pieces first; cover finds the fewest", () => {
    const bytes = Uint8Array.of(0xf0, 0x9f, 0x9a, 0x80);
    assert.deepEqual(index.split(bytes, 2), [256, 257]);
    assert.deepEqual(index.split(bytes, 3), [256, 0x9a, 0x80]);
    assert.deepEqual(index.split(bytes, 4), [0xf0, 0x9f, 0x9a, 0x80]);
    assert.equal(index.split(bytes, 5), null);
    assert.equal(index.split(bytes, 1), null);
    assert.deepEqual(index.cover(enc.encode(" hi")), [258]);
    assert.deepEqual(index.cover(new Uint8Array(0)), []);
  });
  test("special tokens never stand for held-back bytes", () => {
    assert.deepEqual(index.split(enc.encode("<|end|>"), 7), [...enc.encode("<|end|>")]);
    assert.equal(index.split(enc.encode("<|end|>"), 1), null);
  });
});
