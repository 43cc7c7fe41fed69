// The streaming guard's accounting on fake scores: event rules, stretches, the lag and its skipped text,
// the 2,048/1,024 windows, the final wait, and the chat chunks and body built from the events.

import {test} from "node:test";
import assert from "node:assert/strict";
import {GuardWatch, type GuardEvent, type GuardJudge, type Verdict} from "../../../../src/side-models/guard/watch.ts";
import {GUARD_LIMITS, userWindow} from "../../../../src/side-models/guard/limits.ts";
import {ChatGuard, lastUserText} from "../../../../src/api/side/guard/chat-guard.ts";
import type {Risk} from "../../../../src/side-models/guard/prompt.ts";

/** One token per character (code point), so counts are easy to reason about. */
function fakeJudge(script: (replyTokens: number) => Partial<Verdict> & {risk: Risk}, opts: {user?: Verdict; hang?: boolean; fail?: boolean} = {}) {
  const calls: {user: number; reply: number; points: number[]}[] = [];
  const judge: GuardJudge = {
    tokenize: (text) => [...text].map((c) => c.codePointAt(0)!),
    detokenize: (tokens) => String.fromCodePoint(...tokens),
    judgeUser: async (user) => {
      calls.push({user: user.length, reply: -1, points: []});
      return opts.user ?? {risk: "Safe", prob: 0.9, unsafe: 0.05, category: null};
    },
    judgeReply: async (user, reply, points) => {
      calls.push({user: user.length, reply: reply.length, points: [...points]});
      if (opts.fail) throw new Error("engine_busy");
      if (opts.hang) return new Promise<Verdict>(() => undefined);
      const v = script(reply.length);
      return {prob: 0.7, unsafe: v.risk === "Unsafe" ? 0.9 : 0.1, category: v.risk === "Safe" ? null : "Violent", ...v};
    },
  };
  return {judge, calls};
}

function watchOf(judge: GuardJudge, settings: Partial<ConstructorParameters<typeof GuardWatch>[1]> = {}, user = "hi") {
  const events: GuardEvent[] = [];
  const w = new GuardWatch(judge, {chunk: 4, flag: 0.8, lagChars: 4096, ...settings}, user, (ev) => events.push(ev));
  return {w, events};
}

const tick = () => new Promise((r) => setTimeout(r, 5));

test("user first; chunk events only when not Safe or when the label changes; summary counts flags", async () => {
  // stretches end at 4, 8, 12, 16, 20: Safe, Unsafe, Unsafe, Safe, Safe
  const risks: Record<number, Risk> = {4: "Safe", 8: "Unsafe", 12: "Unsafe", 16: "Safe", 20: "Safe"};
  const {judge, calls} = fakeJudge((n) => ({risk: risks[n]!}));
  const {w, events} = watchOf(judge);
  w.push("abcdefghij");
  w.push("klmnopqrst");
  const s = await w.finish(10_000);
  assert.deepEqual(events.map((e) => e.event), ["user", "chunk", "chunk", "chunk"]);
  assert.deepEqual(events.slice(1).map((e) => (e as {tokens: number}).tokens), [8, 12, 16]);
  assert.deepEqual(events.slice(1).map((e) => (e as {risk: Risk}).risk), ["Unsafe", "Unsafe", "Safe"]);
  assert.deepEqual(events.slice(1).map((e) => (e as {flagged: boolean}).flagged), [true, true, false]);
  assert.deepEqual(s, {peak_unsafe: 0.9, flagged_chunks: 2, first_flag_token: 8, chunks: 5, tokens: 20, skipped_chars: 0, stopped: false, complete: true});
  // Each verdict is told where the earlier ones ended (the exact-reuse cut plan).
  assert.deepEqual(calls.slice(1).map((c) => c.points), [[], [4], [4, 8], [4, 8, 12], [4, 8, 12, 16]]);
});

test("flag is a threshold on the Unsafe probability (>= flags)", async () => {
  const {judge} = fakeJudge(() => ({risk: "Controversial", unsafe: 0.5}));
  const {w, events} = watchOf(judge, {flag: 0.5});
  w.push("abcdefgh");
  const s = await w.finish(10_000);
  assert.equal(s.flagged_chunks, 2);
  assert.ok(events.filter((e) => e.event === "chunk").every((e) => (e as {flagged: boolean}).flagged));
  const {judge: j2} = fakeJudge(() => ({risk: "Controversial", unsafe: 0.5}));
  const {w: w2} = watchOf(j2, {flag: 0.500001});
  w2.push("abcdefgh");
  assert.equal((await w2.finish(10_000)).flagged_chunks, 0);
});

test("a stretch waits for `chunk` stable tokens; the unfinished last token is held back; the end takes the rest", async () => {
  const {judge, calls} = fakeJudge(() => ({risk: "Safe"}));
  const {w} = watchOf(judge, {chunk: 4});
  w.push("abcd"); // 4 tokens, the last held back: no stretch yet
  await tick();
  assert.equal(calls.filter((c) => c.reply >= 0).length, 0);
  w.push("e");
  await tick();
  assert.deepEqual(calls.filter((c) => c.reply >= 0).map((c) => c.reply), [4]);
  w.push("fg");
  const s = await w.finish(10_000);
  assert.deepEqual(calls.filter((c) => c.reply >= 0).map((c) => c.reply), [4, 7]);
  assert.equal(s.tokens, 7);
});

test("unreached text beyond the lag is dropped from its oldest end and told as skipped", async () => {
  let open!: () => void;
  const ready = new Promise<void>((r) => (open = r));
  const {judge, calls} = fakeJudge(() => ({risk: "Safe"}));
  const {w, events} = watchOf(judge, {lagChars: 10, chunk: 4, ready});
  w.push("0123456789");
  w.push("abcde"); // 15 unreached: the 5 oldest go
  w.push("fgh"); // 13: 3 more
  open();
  const s = await w.finish(10_000);
  assert.deepEqual(events.map((e) => e.event), ["user", "skipped"]);
  assert.deepEqual(events[1], {event: "skipped", chars: 8, tokens: 0});
  assert.equal(s.skipped_chars, 8);
  assert.equal(s.tokens, 10); // "89abcdefgh"
  assert.deepEqual(calls.filter((c) => c.reply >= 0).map((c) => c.reply), [4, 8, 10]);
});

test("the lag never splits a surrogate pair", async () => {
  let open!: () => void;
  const ready = new Promise<void>((r) => (open = r));
  const {judge} = fakeJudge(() => ({risk: "Safe"}));
  const {w} = watchOf(judge, {lagChars: 3, ready});
  w.push("a😀bc"); // 5 UTF-16 units; cutting 2 would split the emoji, so 3 go
  open();
  const s = await w.finish(10_000);
  assert.equal(s.skipped_chars, 3);
  assert.equal(s.tokens, 2);
});

test("user message plus reply: the guard reads the first 2,048 tokens, then says it has stopped", async () => {
  const {judge, calls} = fakeJudge(() => ({risk: "Safe"}));
  const user = "u".repeat(1000);
  const {w, events} = watchOf(judge, {chunk: 128, lagChars: 1 << 20}, user);
  w.push("r".repeat(1047));
  await tick();
  w.push("r".repeat(10));
  const s = await w.finish(10_000);
  assert.equal(s.tokens, GUARD_LIMITS.windowTokens - 1000);
  assert.equal(s.stopped, true);
  const last = events[events.length - 1]!;
  assert.deepEqual(last, {event: "stopped", tokens: 1048, window_tokens: 2048});
  assert.equal(Math.max(...calls.map((c) => c.reply)), 1048);
  assert.ok(calls.every((c) => c.user === 1000));
});

test("a reply that ends exactly at the window is not 'stopped'", async () => {
  const {judge} = fakeJudge(() => ({risk: "Safe"}));
  const {w, events} = watchOf(judge, {chunk: 128, windowTokens: 10}, "abcd");
  w.push("123456");
  const s = await w.finish(10_000);
  assert.equal(s.tokens, 6);
  assert.equal(s.stopped, false);
  assert.ok(!events.some((e) => e.event === "stopped"));
});

test("user message: up to 1,024 tokens, start and end kept when longer", () => {
  const tokens = Array.from({length: 1500}, (_, i) => i);
  const kept = userWindow(tokens);
  assert.equal(kept.length, 1024);
  assert.deepEqual(kept.slice(0, 512), tokens.slice(0, 512));
  assert.deepEqual(kept.slice(512), tokens.slice(1500 - 512));
  assert.deepEqual(userWindow(tokens.slice(0, 1024)), tokens.slice(0, 1024));
  assert.equal(userWindow(tokens.slice(0, 1025)).length, 1024);
  assert.deepEqual(userWindow(tokens.slice(0, 1025)).slice(-1), [1024]);
});

test("a long user message is cut to 1,024 tokens, leaving the reply 1,024 of the 2,048", async () => {
  const {judge} = fakeJudge(() => ({risk: "Safe"}));
  const {w} = watchOf(judge, {chunk: 128, lagChars: 1 << 20}, "x".repeat(5000));
  assert.equal(w.user.length, 1024);
  w.push("y".repeat(3000));
  const s = await w.finish(10_000);
  assert.equal(s.tokens, 1024);
  assert.equal(s.stopped, true);
});

test("the final wait ends a watch whose verdicts do not come, with complete false", async () => {
  const {judge} = fakeJudge(() => ({risk: "Safe"}), {hang: true});
  const {w, events} = watchOf(judge);
  w.push("abcdefgh");
  const s = await w.finish(30);
  assert.equal(s.complete, false);
  assert.deepEqual(events.map((e) => e.event), ["user"]);
});

test("a verdict that fails ends the watch with an error event", async () => {
  const {judge} = fakeJudge(() => ({risk: "Safe"}), {fail: true});
  const {w, events} = watchOf(judge);
  w.push("abcdefgh");
  const s = await w.finish(10_000);
  assert.equal(s.complete, false);
  assert.equal(events[1]!.event, "error");
  assert.match((events[1] as {message: string}).message, /engine_busy/);
});

// ---- chat chunks and body ----

function fakeRunner(judge: GuardJudge, limit = {leased: 0}) {
  return {
    lease: (max: number) => {
      if (limit.leased >= max) return null;
      limit.leased++;
      return Object.assign(Object.create(judge) as GuardJudge, {release: () => limit.leased--});
    },
  };
}

const who = {id: "chatcmpl-x", created: 1, model: "m"};
const settings = {streams: 1, lagChars: 4096, finalS: 10};

test("ChatGuard: verdicts wait for the reply's end, then stream as choice-less chunks; end just before the terminator", async () => {
  const {judge, calls} = fakeJudge(() => ({risk: "Unsafe"}));
  const g = new ChatGuard({runner: fakeRunner(judge) as never, chunk: 4, flag: 0.8}, "hello", who, settings);
  const sent: any[] = [];
  g.attach((d) => sent.push(d));
  g.see({type: "text", text: "abcdefghi"});
  g.see({type: "reasoning", text: "not read"});
  g.see({type: "tool_call_args", index: 0, text: "{\"not\": \"read\"}"});
  await tick();
  assert.equal(calls.length, 0, "no pass while the reply is still being decoded");
  await g.settle();
  g.close();
  assert.deepEqual(sent.map((c) => c.svc_guard.event), ["user", "chunk", "chunk", "chunk", "end"]);
  for (const c of sent) {
    // No `usage: null`: the SDK's helper would copy it over the usage chunk's numbers.
    assert.deepEqual(Object.keys(c), ["id", "object", "created", "model", "choices", "svc_guard"]);
    assert.deepEqual([c.id, c.object, c.choices], ["chatcmpl-x", "chat.completion.chunk", []]);
  }
  assert.equal(sent[4].svc_guard.tokens, 9);
  assert.equal(sent[4].svc_guard.first_flag_token, 4);
});

test("ChatGuard: past SVC_GUARD_STREAMS a reply is unwatched and says so; the body carries events and summary", async () => {
  const {judge} = fakeJudge(() => ({risk: "Safe"}));
  const runner = fakeRunner(judge);
  const a = new ChatGuard({runner: runner as never, chunk: 4, flag: 0.8}, "hello", who, settings);
  const b = new ChatGuard({runner: runner as never, chunk: 4, flag: 0.8}, "hello", who, settings);
  const sent: any[] = [];
  b.attach((d) => sent.push(d));
  assert.equal(sent.length, 1);
  assert.equal(sent[0].svc_guard.event, "unwatched");
  b.see({type: "text", text: "abcdefgh"});
  await b.settle();
  assert.equal(sent.length, 1, "an unwatched reply gets no end event");
  assert.deepEqual(b.bodyField().summary, null);
  a.see({type: "text", text: "abcdefgh"});
  await a.settle();
  a.close();
  b.close();
  const body = a.bodyField();
  assert.deepEqual(body.events.map((e) => e.event), ["user"]);
  assert.equal(body.summary!.chunks, 2);
  assert.equal(body.summary!.complete, true);
  // The slot is free again.
  const c = new ChatGuard({runner: runner as never, chunk: 4, flag: 0.8}, "x", who, settings);
  assert.notEqual(c.bodyField().events[0]?.event, "unwatched");
  c.close();
});

test("lastUserText reads the user's last message", () => {
  assert.equal(lastUserText([{role: "user", content: "a"}, {role: "assistant", content: "b"}, {role: "user", content: "c"}, {role: "assistant", content: "d"}]), "c");
  assert.equal(lastUserText([{role: "system", content: "s"}]), "");
});
