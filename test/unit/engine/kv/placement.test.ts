// Where a request runs and what it starts from: pickTarget keeps the busy regions contiguous and prefers a region
// whose held state the prompt extends; place() picks the source that serves the most (in place, a copy, a stored
// state), protects the state a copy or load would overwrite, and says why less was reused than could have been.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {pickTarget, place, type PlaceInput, type RegionView, type StateCandidate} from "../../../../src/engine/kv/placement.ts";
import {emptyMemory, planCuts, type CutPlan, type RegionMemory} from "../../../../src/engine/kv/region-memory.ts";

/** A cold plan matched by pieces (the rule these placement cases were written for). */
const piecesPlan = (length: number, piece: number, boundaries: number[] = []): CutPlan => ({cuts: planCuts(length, piece, boundaries), match: "pieces"});

const PIECE = 16;
const seq = (n: number, base = 0) => Array.from({length: n}, (_, i) => base + i);

/** A held prompt (no sealed reply), exact over all its tokens. */
function held(tokens: number[], lastUsed = 1, boundaries: number[] = []): RegionMemory {
  return {tokens, cuts: planCuts(tokens.length, PIECE, boundaries), lastUsed, replyStart: 0};
}

/** A held prompt plus its sealed reply, cut the way the pool seals it (pieces to multiples of PIECE and the reply's end). */
function sealed(prompt: number[], reply: number[], lastUsed = 1): RegionMemory {
  const p = prompt.length;
  const end = p + reply.length;
  return {tokens: [...prompt, ...reply], cuts: [...planCuts(p, PIECE), ...planCuts(end, PIECE, [p]).filter((c) => c > p)], lastUsed, replyStart: p};
}

const idle = (id: number, memory: RegionMemory = emptyMemory()): RegionView => ({id, busy: false, memory});
const busy = (id: number, memory: RegionMemory = emptyMemory()): RegionView => ({id, busy: true, memory});

function input<T = string>(over: Partial<PlaceInput<T>> & {regions: RegionView[]; prompt: number[]}): PlaceInput<T> {
  return {target: 0, plan: piecesPlan(over.prompt.length, PIECE), states: [], evicted: [], cacheOn: true, stateMargin: 16, minCopy: 16, ...over};
}

function state(tokens: number[], origin: "disk" | "handle" = "disk", ref = "s"): StateCandidate<string> {
  return {tokens, cuts: planCuts(tokens.length, PIECE), origin, ref};
}

describe("pickTarget", () => {
  const prompt = seq(100);
  const plan = piecesPlan(100, PIECE);
  const unrelated = (lastUsed: number) => held(seq(40, 5000 + lastUsed * 100), lastUsed);

  test("busy {1}: only 0 or 2, even when 3 holds the prompt's history", () => {
    const memories = [unrelated(5), emptyMemory(), unrelated(3), held(seq(48))];
    assert.equal(pickTarget([0, 2, 3], [1], memories, prompt, plan, true), 2, "the least recently used of 0 and 2");
    const memories2 = [unrelated(3), emptyMemory(), unrelated(5), held(seq(48))];
    assert.equal(pickTarget([3, 2, 0], [1], memories2, prompt, plan, true), 0);
    const emptyPool = [emptyMemory(), emptyMemory(), emptyMemory(), held(seq(48))];
    assert.ok([0, 2].includes(pickTarget([0, 2, 3], [1], emptyPool, prompt, plan, true)));
  });

  test("busy {0,2}: the gap 1, not 3, even when 3 holds the prompt's history", () => {
    const memories = [emptyMemory(), unrelated(9), emptyMemory(), held(seq(64))];
    assert.equal(pickTarget([1, 3], [0, 2], memories, prompt, plan, true), 1);
  });

  test("nothing busy: any region, so the one holding the prompt's history wins", () => {
    const memories = [emptyMemory(), unrelated(2), emptyMemory(), held(seq(64))];
    assert.equal(pickTarget([0, 1, 2, 3], [], memories, prompt, plan, true), 3);
  });

  test("no free region touches the busy run: the lowest free one", () => {
    // The busy run is 0-1 and 2 is not free (e.g. just granted): neither 3 nor 4 touches the run.
    const memories = [emptyMemory(), emptyMemory(), emptyMemory(), emptyMemory(), held(seq(64))];
    assert.equal(pickTarget([4, 3], [0, 1], memories, prompt, plan, true), 3, "the lowest free, even though 4 holds the prompt's history");
  });

  test("a region whose whole held state the prompt extends beats an empty one", () => {
    const memories = [emptyMemory(), held(seq(32)), emptyMemory()];
    assert.equal(pickTarget([0, 1, 2], [], memories, prompt, plan, true), 1);
    // Among several that the prompt extends, the one serving the most.
    const two = [held(seq(32)), held(seq(64)), emptyMemory()];
    assert.equal(pickTarget([0, 1, 2], [], two, prompt, plan, true), 1);
  });

  test("a region sharing only a prefix does not count as extended: an empty region wins", () => {
    // Region 0 holds 32 of the prompt's tokens and then departs: running there would lose the rest.
    const memories = [held([...seq(32), ...seq(32, 9000)]), emptyMemory()];
    assert.equal(pickTarget([0, 1], [], memories, prompt, plan, true), 1);
  });

  test("no extended and no empty region: the least recently used", () => {
    const memories = [unrelated(10), unrelated(4), unrelated(20)];
    assert.equal(pickTarget([0, 1, 2], [], memories, prompt, plan, true), 1);
    const memories2 = [unrelated(3), unrelated(4), unrelated(20)];
    assert.equal(pickTarget([0, 1, 2], [], memories2, prompt, plan, true), 0);
  });

  test("cache off: the lowest allowed region, whatever they hold", () => {
    const memories = [unrelated(10), unrelated(4), emptyMemory(), held(seq(64))];
    assert.equal(pickTarget([3, 2, 1, 0], [], memories, prompt, plan, false), 0);
    assert.equal(pickTarget([0, 2, 3], [1], memories, prompt, plan, false), 0, "lowest of the allowed 0 and 2");
    assert.equal(pickTarget([1, 3], [0, 2], memories, prompt, plan, false), 1);
  });
});

describe("place: the source", () => {
  test("in place: a follow-up resumes after the target's sealed reply", () => {
    const history = seq(40);
    const reply = seq(24, 500);
    const prompt = [...history, ...reply, ...seq(10, 9000)];
    const p = place(input({regions: [idle(0, sealed(history, reply)), idle(1)], prompt, plan: piecesPlan(prompt.length, PIECE, [40, 64])}));
    assert.deepEqual(p.source, {kind: "region", id: 0});
    assert.equal(p.reuse, 64);
    assert.equal(p.moveAsideTo, null);
    assert.deepEqual(p.overwritten, []);
    assert.equal(p.dropped, false);
    assert.equal(p.miss, null);
    assert.equal(p.rewroteLastMessage, false);
    assert.equal(p.coldResort, false);
  });

  test("a copy from another idle region when it serves at least minCopy tokens", () => {
    const prompt = [...seq(48), ...seq(10, 9000)];
    const plan = piecesPlan(prompt.length, PIECE, [48]);
    const p = place(input({regions: [idle(0), idle(1, held(seq(48)))], prompt, plan}));
    assert.deepEqual(p.source, {kind: "region", id: 1});
    assert.equal(p.reuse, 48);
    assert.equal(p.miss, null);
    assert.equal(p.moveAsideTo, null, "the target held nothing");
    assert.deepEqual(p.overwritten, []);
  });

  test("exactly minCopy tokens is copied; one fewer than minCopy is not", () => {
    const prompt = [...seq(16), ...seq(20, 9000)];
    const regions = [idle(0), idle(1, held(seq(16)))];
    const at = place(input({regions, prompt, minCopy: 16}));
    assert.deepEqual(at.source, {kind: "region", id: 1});
    assert.equal(at.reuse, 16);
    const below = place(input({regions, prompt, minCopy: 17}));
    assert.deepEqual(below.source, {kind: "none"});
    assert.equal(below.reuse, 0);
    assert.deepEqual(below.miss, {reason: "cold"});
  });

  test("a tie between the target and another region stays in place; a busy region is never a source", () => {
    const prompt = seq(100);
    const tie = place(input({regions: [idle(0, held(seq(48))), idle(1, held(seq(48)))], prompt}));
    assert.deepEqual(tie.source, {kind: "region", id: 0});
    const onlyBusy = place(input({regions: [idle(0), busy(1, held(seq(64)))], prompt}));
    assert.deepEqual(onlyBusy.source, {kind: "none"});
  });

  test("a stored state wins only when it beats memory by more than stateMargin", () => {
    const prompt = seq(100);
    // Memory serves 32 (40 is not a cut of the prompt's plan).
    const regions = [idle(0, held(seq(40))), idle(1)];
    const mem = place(input({regions, prompt}));
    assert.equal(mem.reuse, 32);
    const equalMargin = place(input({regions, prompt, states: [state(seq(48))]}));
    assert.deepEqual(equalMargin.source, {kind: "region", id: 0}, "48 is not more than 32 + 16");
    assert.equal(equalMargin.reuse, 32);
    const s = state(seq(64), "handle", "h");
    const beats = place(input({regions, prompt, states: [state(seq(48)), s]}));
    assert.deepEqual(beats.source, {kind: "state", state: s});
    assert.equal(beats.reuse, 64);
    assert.equal(beats.miss, null);
  });

  test("with nothing in memory, any state that serves something wins", () => {
    const prompt = seq(100);
    const s = state(seq(16), "disk", "d");
    const p = place(input({regions: [idle(0), idle(1)], prompt, states: [s], stateMargin: 16}));
    assert.deepEqual(p.source, {kind: "state", state: s});
    assert.equal(p.reuse, 16);
    const useless = place(input({regions: [idle(0)], prompt, states: [state(seq(10, 7000))]}));
    assert.deepEqual(useless.source, {kind: "none"});
    assert.deepEqual(useless.miss, {reason: "cold"});
  });

  test("a later state must beat the earlier winner by the margin too", () => {
    const prompt = seq(200);
    const a = state(seq(64), "disk", "a");
    const b = state(seq(80), "handle", "b");
    const c = state(seq(128), "handle", "c");
    assert.deepEqual(place(input({regions: [idle(0)], prompt, states: [a, b]})).source, {kind: "state", state: a});
    assert.deepEqual(place(input({regions: [idle(0)], prompt, states: [a, b, c]})).source, {kind: "state", state: c});
  });

  test("an unknown target is an error", () => {
    assert.throws(() => place(input({regions: [idle(0)], prompt: seq(10), target: 3})), /no region 3/);
  });
});

describe("place: the state the target held", () => {
  const other = (lastUsed: number) => held(seq(48, 3000 + lastUsed), lastUsed);
  const prompt = [...seq(48), ...seq(20, 9000)];
  const plan = piecesPlan(prompt.length, PIECE, [48]);

  test("a copy over a held target moves it aside to an empty idle region first", () => {
    const p = place(input({regions: [idle(0, other(10)), idle(1, held(seq(48), 20)), idle(2)], prompt, plan}));
    assert.deepEqual(p.source, {kind: "region", id: 1});
    assert.equal(p.moveAsideTo, 2);
    assert.deepEqual(p.overwritten, []);
  });

  test("... or to an idle region holding an older state (which is then overwritten)", () => {
    const p = place(input({regions: [idle(0, other(10)), idle(1, held(seq(48), 20)), idle(2, other(5))], prompt, plan}));
    assert.equal(p.moveAsideTo, 2);
    assert.deepEqual(p.overwritten, [2]);
  });

  test("an empty region is preferred to an older one", () => {
    const p = place(input({regions: [idle(0, other(10)), idle(1, held(seq(48), 20)), idle(2, other(1)), idle(3)], prompt, plan}));
    assert.equal(p.moveAsideTo, 3);
    assert.deepEqual(p.overwritten, []);
  });

  test("only newer or busy regions left: the target's state is listed as overwritten", () => {
    const newer = place(input({regions: [idle(0, other(10)), idle(1, held(seq(48), 20)), idle(2, other(50))], prompt, plan}));
    assert.equal(newer.moveAsideTo, null);
    assert.deepEqual(newer.overwritten, [0]);
    const busyOnly = place(input({regions: [idle(0, other(10)), idle(1, held(seq(48), 20)), busy(2)], prompt, plan}));
    assert.equal(busyOnly.moveAsideTo, null);
    assert.deepEqual(busyOnly.overwritten, [0]);
  });

  test("a state load over a held target moves it aside too", () => {
    const s = state(seq(64), "handle", "h");
    const p = place(input({regions: [idle(0, other(10)), idle(1)], prompt: seq(100), states: [s]}));
    assert.deepEqual(p.source, {kind: "state", state: s});
    assert.equal(p.moveAsideTo, 1);
    assert.deepEqual(p.overwritten, []);
    const alone = place(input({regions: [idle(0, other(10))], prompt: seq(100), states: [s]}));
    assert.equal(alone.moveAsideTo, null);
    assert.deepEqual(alone.overwritten, [0]);
  });

  test("a follow-up departing inside the target's sealed reply drops the rest (not an overwrite) and rewrote the last message", () => {
    const history = seq(40);
    const reply = seq(24, 500);
    // The assistant message is edited after its 10th token; then a new user message.
    const prompt2 = [...history, ...reply.slice(0, 10), ...seq(20, 7000)];
    const p = place(input({regions: [idle(0, sealed(history, reply)), idle(1)], prompt: prompt2, plan: piecesPlan(prompt2.length, PIECE, [40, 60])}));
    assert.deepEqual(p.source, {kind: "region", id: 0});
    assert.equal(p.reuse, 48);
    assert.equal(p.dropped, true);
    assert.deepEqual(p.overwritten, []);
    assert.equal(p.moveAsideTo, null, "in place: nothing is moved");
    assert.deepEqual(p.miss, {reason: "diverged", at: 50});
    assert.equal(p.rewroteLastMessage, true);
  });

  test("a prompt repeating exactly the history the reply answered is a follow-up too (common = replyStart)", () => {
    const history = seq(48);
    const reply = seq(24, 500);
    const prompt2 = [...history, ...seq(20, 7000)];
    const p = place(input({regions: [idle(0, sealed(history, reply))], prompt: prompt2, plan: piecesPlan(prompt2.length, PIECE, [48])}));
    assert.equal(p.reuse, 48);
    assert.equal(p.dropped, true);
    assert.deepEqual(p.overwritten, []);
    assert.equal(p.rewroteLastMessage, false, "it departs at the reply's start, not inside it");
    assert.deepEqual(p.miss, {reason: "diverged", at: 48});
  });

  test("an unrelated prompt sharing only a prefix of the history overwrites the target's state", () => {
    const history = seq(40);
    const reply = seq(24, 500);
    const prompt2 = [...seq(20), ...seq(30, 8000)];
    const p = place(input({regions: [idle(0, sealed(history, reply)), idle(1)], prompt: prompt2}));
    assert.deepEqual(p.source, {kind: "region", id: 0});
    assert.equal(p.reuse, 16);
    assert.equal(p.dropped, false);
    assert.deepEqual(p.overwritten, [0]);
    assert.equal(p.moveAsideTo, null, "in-place reuse is never moved aside");
    assert.deepEqual(p.miss, {reason: "diverged", at: 20});
    assert.equal(p.rewroteLastMessage, false);
  });

  test("a held prompt without a sealed reply (replyStart 0) is overwritten, not dropped, by a partial reuse", () => {
    const prompt2 = [...seq(40), ...seq(30, 8000)];
    const p = place(input({regions: [idle(0, held(seq(64)))], prompt: prompt2}));
    assert.equal(p.reuse, 32);
    assert.equal(p.dropped, false);
    assert.deepEqual(p.overwritten, [0]);
  });
});

describe("place: miss reasons", () => {
  test("cache_off: nothing reused even when the target holds the prompt", () => {
    const prompt = seq(100);
    const p = place(input({regions: [idle(0, held(seq(64)))], prompt, cacheOn: false, states: [state(seq(80))]}));
    assert.deepEqual(p.miss, {reason: "cache_off"});
    assert.deepEqual(p.source, {kind: "none"});
    assert.equal(p.reuse, 0);
    assert.deepEqual(p.overwritten, []);
  });

  test("region_busy: a busy region holds more than what was reused", () => {
    const prompt = seq(100);
    const partial = place(input({regions: [idle(0, held(seq(32))), busy(1, held(seq(80)))], prompt}));
    assert.equal(partial.reuse, 32);
    assert.deepEqual(partial.miss, {reason: "region_busy"});
    assert.equal(partial.coldResort, false);
    const cold = place(input({regions: [idle(0), busy(1, held(seq(80)))], prompt}));
    assert.equal(cold.reuse, 0);
    assert.deepEqual(cold.miss, {reason: "region_busy"});
    assert.equal(cold.coldResort, true);
    const less = place(input({regions: [idle(0, held(seq(80))), busy(1, held(seq(32)))], prompt}));
    assert.equal(less.miss, null, "a busy region holding less is no reason");
  });

  test("evicted: an overwritten state would have served more", () => {
    const prompt = seq(100);
    const gone = {tokens: seq(64), cuts: planCuts(64, PIECE)};
    const p = place(input({regions: [idle(0)], prompt, evicted: [gone]}));
    assert.deepEqual(p.miss, {reason: "evicted"});
    assert.equal(p.reuse, 0);
    const partial = place(input({regions: [idle(0, held(seq(32)))], prompt, evicted: [gone]}));
    assert.deepEqual(partial.miss, {reason: "evicted"});
    const covered = place(input({regions: [idle(0, held(seq(64)))], prompt, evicted: [gone]}));
    assert.equal(covered.miss, null, "memory serves as much as the evicted state did");
    const busyFirst = place(input({regions: [idle(0), busy(1, held(seq(80)))], prompt, evicted: [gone]}));
    assert.deepEqual(busyFirst.miss, {reason: "region_busy"}, "region_busy is reported before evicted");
  });

  test("diverged: the source held more, and the prompt departs at the common prefix", () => {
    const prompt = [...seq(40), ...seq(30, 9000)];
    const p = place(input({regions: [idle(0, held(seq(64)))], prompt}));
    assert.equal(p.reuse, 32);
    assert.deepEqual(p.miss, {reason: "diverged", at: 40});
    // From a stored state: the state's common prefix.
    const s = state([...seq(50), ...seq(14, 4000)]);
    const fromState = place(input({regions: [idle(0)], prompt: [...seq(50), ...seq(30, 9000)], states: [s]}));
    assert.deepEqual(fromState.source, {kind: "state", state: s});
    assert.equal(fromState.reuse, 48);
    assert.deepEqual(fromState.miss, {reason: "diverged", at: 50});
  });

  test("cold: nothing anywhere shares a prefix", () => {
    const p = place(input({regions: [idle(0, held(seq(64, 5000))), idle(1)], prompt: seq(100)}));
    assert.deepEqual(p.miss, {reason: "cold"});
    assert.deepEqual(p.source, {kind: "none"});
    assert.equal(p.reuse, 0);
    assert.equal(p.coldResort, false);
    assert.equal(p.moveAsideTo, 1, "the unrelated state on the target is kept in the empty region");
    const alone = place(input({regions: [idle(0, held(seq(64, 5000)))], prompt: seq(100)}));
    assert.deepEqual(alone.miss, {reason: "cold"});
    assert.deepEqual(alone.overwritten, [0], "with nowhere to move it, the unrelated state on the target is lost");
  });
});

describe("place: rewroteLastMessage", () => {
  const history = seq(40);
  const reply = seq(40, 500);
  const regions = () => [idle(0, sealed(history, reply)), idle(1)];

  test("continuing inside the sealed reply with edited text (continue_final_message) rewrites it", () => {
    const prompt = [...history, ...reply.slice(0, 20), ...seq(5, 7000)];
    const p = place(input({regions: regions(), prompt, plan: piecesPlan(prompt.length, PIECE, [40])}));
    assert.equal(p.reuse, 48);
    assert.equal(p.rewroteLastMessage, true);
    assert.equal(p.dropped, true);
  });

  test("departing before the reply or extending past it does not", () => {
    const before = [...seq(30), ...seq(40, 9000)];
    assert.equal(place(input({regions: regions(), prompt: before})).rewroteLastMessage, false);
    const after = [...history, ...reply, ...seq(10, 9000)];
    const p = place(input({regions: regions(), prompt: after, plan: piecesPlan(after.length, PIECE, [40, 80])}));
    assert.equal(p.reuse, 80);
    assert.equal(p.rewroteLastMessage, false);
  });

  test("a copied source counts its reply too", () => {
    const prompt = [...history, ...reply.slice(0, 20), ...seq(20, 7000)];
    const p = place(input({regions: [idle(0), idle(1, sealed(history, reply))], prompt, plan: piecesPlan(prompt.length, PIECE, [40, 60])}));
    assert.deepEqual(p.source, {kind: "region", id: 1});
    assert.equal(p.rewroteLastMessage, true);
    assert.deepEqual(p.miss, {reason: "diverged", at: 60});
  });
});
