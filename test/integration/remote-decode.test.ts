// remoteDecode against a scripted llama-server (/completion streaming over real HTTP): held-back UTF-8 tokens
// recovered, a grammar hand-over continued as a new request that regenerates the accepted bytes, a divergent
// continuation refused, failover before the first token, a stop token, a replica that dies mid-stream, and JSON
// closed as the budget ends one token per request (svc choosing among the replica's candidates).

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import type {DecodeItem, DecodeJob, DecodeStats, GrammarRef} from "../../src/engine/engine.ts";
import {EngineUnavailableError} from "../../src/engine/errors.ts";
import type {ReplicaUnreachableError} from "../../src/engine/remote/llama-server-api.ts";
import {remoteDecode, type RemoteDecodeDeps} from "../../src/engine/remote/remote-decode.ts";
import {TokenByteIndex} from "../../src/engine/remote/token-gaps.ts";
import {scriptedServer, type ScriptedServer} from "./scripted-http.ts";

// Toy vocabulary: ids 0..255 are bytes, 256 = "{\"" (a brace and a quote in one token), 300 = end of generation.
const enc = new TextEncoder();
const table: Uint8Array[] = [];
for (let b = 0; b < 256; b++) table.push(Uint8Array.of(b));
table[256] = enc.encode("{\"");
const EOG = 300;
const bytesOf = (t: number) => (t === EOG ? new Uint8Array(0) : table[t] ?? new Uint8Array(0));
const ids = (text: string) => [...enc.encode(text)];

type Chunk = {content: string; tokens: number[]; tokens_predicted: number; stop?: boolean; stop_type?: string};
/** What the scripted replica answers to each /completion request, in order; "die" cuts the connection after the chunks. */
let script: {chunks: Chunk[]; die?: boolean}[] = [];
const requests: {prompt: number[]; grammar?: string; n_predict: number; n_probs?: number; stream?: boolean}[] = [];
/** The candidates a scripted replica offers for each one-token (not streamed) request, in order. */
let candidates: {id: number; logprob: number}[][] = [];
let server: ScriptedServer;
let url = "";

before(async () => {
  server = await scriptedServer((_path, body, res) => {
    const parsed = JSON.parse(body);
    requests.push(parsed);
    if (parsed.stream === false) {
      const top = candidates.shift() ?? [];
      res.writeHead(200, {"content-type": "application/json"});
      res.end(JSON.stringify({content: "", tokens: [top[0]?.id ?? EOG], stop: true, completion_probabilities: [{id: top[0]?.id ?? EOG, logprob: top[0]?.logprob ?? 0, top_logprobs: top}]}));
      return;
    }
    const step = script.shift() ?? {chunks: []};
    res.writeHead(200, {"content-type": "text/event-stream"});
    for (const c of step.chunks) res.write(`data: ${JSON.stringify({stop: false, ...c})}\n\n`);
    if (step.die) {
      // After the chunks reach the client: a replica killed mid-reply.
      setTimeout(() => res.socket?.destroy(), 100);
      return;
    }
    res.end(`data: ${JSON.stringify({content: "", tokens: [], stop: true, stop_type: "eos"})}\n\n`);
  });
  url = server.url;
});
after(() => server.close());

/** One chunk per token id, with the text llama-server would send (held-back tokens: see tokens_predicted). */
function chunksOf(tokens: number[], start = 0): Chunk[] {
  return tokens.map((t, i) => ({content: new TextDecoder().decode(bytesOf(t)), tokens: [t], tokens_predicted: start + i + 1}));
}

function deps(over: Partial<RemoteDecodeDeps> = {}): RemoteDecodeDeps & {lostCalls: number; heldLog: number[][]} {
  const out = {
    bytes: new TokenByteIndex(table.length, bytesOf, (t) => t === EOG),
    tokenBytes: bytesOf,
    isSpecial: (t: number) => t === EOG,
    target: () => ({url, slot: 0}),
    failover: async (err: ReplicaUnreachableError) => {
      throw err;
    },
    lost: () => {
      out.lostCalls++;
    },
    held: (tokens: readonly number[]) => {
      out.heldLog.push([...tokens]);
    },
    prompt: (tokens: readonly number[]) => tokens,
    // A grammar state that never needs closing (the closing test brings its own).
    closer: async () => ({accept: () => undefined, due: false, choose: (c: readonly {id: number}[]) => c[0]!.id}),
    lostCalls: 0,
    heldLog: [] as number[][],
    ...over,
  };
  return out;
}

function job(over: Partial<DecodeJob> = {}): DecodeJob {
  return {prompt: [1, 2, 3], plan: {cuts: [3], match: "pieces"}, maxTokens: 50, stopTokenIds: new Set([EOG]), signal: new AbortController().signal,
    sampling: {temperature: 0, topK: 40, topP: 1, minP: 0, seed: 1, presencePenalty: 0, frequencyPenalty: 0, repeatPenalty: 1, repeatLastN: 64}, ...over};
}

const stats = (): DecodeStats => ({promptTokens: 0, cachedTokens: 0, promptMs: 0, predictedMs: 0, predictedTokens: 0, draftTokens: 0, draftAccepted: 0});

async function collect(run: AsyncGenerator<DecodeItem, unknown, void>): Promise<{tokens: number[]; end: unknown}> {
  const tokens: number[] = [];
  for (;;) {
    const r = await run.next();
    if (r.done) return {tokens, end: r.value};
    if (r.value.kind === "token") tokens.push(r.value.token);
  }
}

describe("remoteDecode", () => {
  test("tokens held back inside a UTF-8 character are recovered from the next chunk's text", async () => {
    requests.length = 0;
    const rocket = ids("🚀"); // four byte tokens; llama-server streams only the last, with all four bytes as its text
    script = [{chunks: [...chunksOf(ids("hi ")), {content: "🚀", tokens: [rocket[3]!], tokens_predicted: 7}, ...chunksOf([EOG], 7)]}];
    const {tokens, end} = await collect(remoteDecode(job(), deps(), stats()));
    assert.deepEqual(tokens, [...ids("hi "), ...rocket]);
    assert.deepEqual(end, {reason: "stop_token", token: EOG});
    assert.deepEqual(requests[0]!.prompt, [1, 2, 3]);
  });

  test("a grammar bound with accepted tokens continues as a new request that regenerates them, checked byte for byte", async () => {
    requests.length = 0;
    const grammar: GrammarRef = {gbnf: "root ::= \"{\" [a-z\"]* \"}\"", key: "g"};
    // First request: free text "x{"; the steering binds the grammar at "{" with the brace accepted.
    // Second request (prompt + "x"): the replica writes "{\"" as one token; its quote is the reply's next token.
    script = [{chunks: chunksOf(ids("x{y"))}, {chunks: [...chunksOf([256, ...ids("a\"}")]), ...chunksOf([EOG], 4)]}];
    const steering = {onToken: (t: number) => (t === 123 ? {bind: {grammar, accept: [123]}} : null)};
    const {tokens, end} = await collect(remoteDecode(job({steering}), deps(), stats()));
    assert.equal(new TextDecoder().decode(Uint8Array.from(tokens)), "x{\"a\"}");
    assert.deepEqual(end, {reason: "stop_token", token: EOG});
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1]!.prompt, [1, 2, 3, ...ids("x")], "the continuation starts before the accepted brace");
    assert.equal(requests[1]!.grammar, grammar.gbnf);
    assert.equal(requests[1]!.n_predict, 49);
  });

  test("closing due: the stream ends and each further token is one request whose candidates svc chooses among", async () => {
    requests.length = 0;
    const grammar: GrammarRef = {gbnf: "root ::= \"[\" [a-z,]* \"]\"", key: "close"};
    // A closer that becomes due after two tokens, takes "]" when offered, else the first candidate.
    let seen = 0;
    const fed: number[] = [];
    const closer = {accept: (t: number) => {
      seen++;
      fed.push(t);
    }, get due() {
      return seen >= 2;
    }, choose: (c: readonly {id: number}[]) => (c.some((x) => x.id === 93) ? 93 : c[0]!.id)};
    script = [{chunks: chunksOf(ids("[a,b,c,d"))}];
    candidates = [[{id: 44, logprob: -0.1}, {id: 101, logprob: -2}], [{id: 101, logprob: -0.5}, {id: 93, logprob: -3}], [{id: EOG, logprob: -0.2}]];
    const {tokens, end} = await collect(remoteDecode(job({grammar, maxTokens: 20}), deps({closer: async () => closer}), stats()));
    assert.deepEqual(tokens, [...ids("[a"), 44, 93], "two streamed tokens, then svc's choices: the first candidate, then the closer");
    assert.deepEqual(end, {reason: "stop_token", token: EOG});
    assert.deepEqual(fed, [...ids("[a"), 44, 93], "every token went into svc's grammar state (the stop token does not)");
    assert.equal(requests.length, 4);
    assert.equal(requests[0]!.grammar, grammar.gbnf);
    for (const [i, r] of requests.slice(1).entries()) {
      assert.equal(r.stream, false);
      assert.equal(r.n_predict, 1);
      assert.equal(r.n_probs, 64);
      assert.equal(r.grammar, undefined, "the replica's grammar would start over: svc's state decides");
      assert.deepEqual(r.prompt, [1, 2, 3, ...[...ids("[a"), 44, 93].slice(0, 2 + i)], "each step sends the reply so far");
    }
  });

  test("a stop token the steering overrules: the brace takes its place and the reply goes on under the grammar", async () => {
    requests.length = 0;
    const grammar: GrammarRef = {gbnf: "root ::= \"{\" [a-z]* \"}\"", key: "s"};
    // First request: "ok" then end of generation, which the steering replaces by "{" (bound, accepted). Second request
    // (prompt + "ok"): the replica regenerates the brace under the grammar and closes it.
    script = [{chunks: [...chunksOf(ids("ok")), ...chunksOf([EOG], 2)]}, {chunks: [...chunksOf(ids("{z}")), ...chunksOf([EOG], 3)]}];
    const steering = {onToken: () => null, onStop: (t: number) => (t === EOG ? {replaceWith: [123], bind: {grammar, accept: [123]}} : null)};
    let stops = 0;
    const once = {...steering, onStop: (t: number) => (stops++ === 0 ? steering.onStop(t) : null)};
    const {tokens, end} = await collect(remoteDecode(job({steering: once}), deps(), stats()));
    assert.equal(new TextDecoder().decode(Uint8Array.from(tokens)), "ok{z}");
    assert.deepEqual(end, {reason: "stop_token", token: EOG}, "the second stop token is let through");
    assert.equal(stops, 2);
    assert.deepEqual(requests[1]!.prompt, [1, 2, 3, ...ids("ok")]);
    assert.equal(requests[1]!.grammar, grammar.gbnf);
  });

  test("a continuation that does not rewrite the accepted bytes is refused, not joined", async () => {
    const grammar: GrammarRef = {gbnf: "root ::= \"[\"", key: "h"};
    script = [{chunks: chunksOf(ids("{"))}, {chunks: chunksOf(ids("[1]"))}];
    const steering = {onToken: (t: number) => (t === 123 ? {bind: {grammar, accept: [123]}} : null)};
    await assert.rejects(collect(remoteDecode(job({steering}), deps(), stats())),
      (err: Error) => err instanceof EngineUnavailableError && /could not be joined/.test(err.message));
  });

  test("a replacement token ends the request; the next one starts after the replacement", async () => {
    requests.length = 0;
    script = [{chunks: chunksOf(ids("ab"))}, {chunks: [...chunksOf(ids("c")), ...chunksOf([EOG], 1)]}];
    const steering = {onToken: (t: number) => (t === 97 ? {replaceWith: ids("A")} : null)};
    const {tokens} = await collect(remoteDecode(job({steering}), deps(), stats()));
    assert.deepEqual(tokens, ids("Ac"));
    assert.deepEqual(requests[1]!.prompt, [1, 2, 3, ...ids("A")]);
  });

  test("a stop token that is not end-of-generation ends the reply there", async () => {
    script = [{chunks: chunksOf(ids("ab;cd"))}];
    const {tokens, end} = await collect(remoteDecode(job({stopTokenIds: new Set([EOG, 59])}), deps(), stats()));
    assert.deepEqual(tokens, ids("ab"));
    assert.deepEqual(end, {reason: "stop_token", token: 59});
  });

  test("an unreachable replica before the first token fails over; the request continues on the next target", async () => {
    requests.length = 0;
    let target = {url: "http://127.0.0.1:1", slot: 0};
    let failovers = 0;
    script = [{chunks: [...chunksOf(ids("ok")), ...chunksOf([EOG], 2)]}];
    const d = deps({target: () => target, failover: async () => {
      failovers++;
      target = {url, slot: 1};
    }});
    const {tokens} = await collect(remoteDecode(job(), d, stats()));
    assert.deepEqual(tokens, ids("ok"));
    assert.equal(failovers, 1);
    assert.equal(requests.length, 1);
  });

  test("a replica that dies mid-stream ends the reply with engine_unavailable and is reported lost", async () => {
    script = [{chunks: chunksOf(ids("par")), die: true}];
    const d = deps();
    const seen: number[] = [];
    const run = remoteDecode(job(), d, stats());
    await assert.rejects((async () => {
      for (;;) {
        const r = await run.next();
        if (r.done) return;
        if (r.value.kind === "token") seen.push(r.value.token);
      }
    })(), (err: Error) => err instanceof EngineUnavailableError && /stopped answering/.test(err.message));
    assert.deepEqual(seen, ids("par"));
    assert.equal(d.lostCalls, 1);
    assert.deepEqual(d.heldLog.at(-1), [1, 2, 3, ...ids("par")]);
  });
});
