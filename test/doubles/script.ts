// Scripts for the engine double: what a test says the "model" replies to a request, played one token at a
// time with the waits a test needs (hold a reply mid-stream at a gate, pace its tokens), and the double's
// fixed fake log probabilities.

import type {DecodeJob, TokenScore} from "../../src/engine/engine.ts";
import * as tok from "./byte-tokenizer.ts";

/** One part of a scripted reply. */
export interface ScriptStep {
  /** Reply text, tokenized with special tokens parsed (so "<|im_end|>" in it is the end-of-turn token). */
  text?: string;
  /** Token ids, played as they are. */
  tokens?: number[];
  /** Waited for before this step's first token: a promise the test settles (a rejection fails the decode, like an engine error), or milliseconds. */
  wait?: Promise<unknown> | number;
  /** Milliseconds before each token of this step. */
  delayMs?: number;
}

export interface ScriptPlan {
  steps: ScriptStep[];
  /** When the steps run out: "eos" (default) ends the turn with <|im_end|>; "repeat" plays them again, so only the budget or a stop ends the reply. */
  end?: "eos" | "repeat";
}

export type ScriptReply = string | ScriptStep[] | ScriptPlan;
/** The reply to one request: the prompt it was given (text with special tokens shown) and the whole job. */
export type Script = (prompt: {tokens: number[]; text: string}, job: DecodeJob) => ScriptReply;

/** The alternatives every fake score lists after the sampled token: the bytes of common English letters. */
const ALTERNATIVES = [..." etaoinshrdlucmfwypvbgkjqxz"].map((c) => tok.byteToken(c.charCodeAt(0)));

/** A script's reply as one token at a time, with the waits that come before each; ends with <|im_end|> unless told to repeat. */
export function* playback(reply: ScriptReply): Generator<{token: number; wait?: Promise<unknown> | number; delayMs?: number}> {
  const plan: ScriptPlan = typeof reply === "string" ? {steps: [{text: reply}]} : Array.isArray(reply) ? {steps: reply} : reply;
  for (;;) {
    let played = 0;
    for (const step of plan.steps) {
      const tokens = [...(step.text !== undefined ? tok.tokenize(step.text, {special: true}) : []), ...(step.tokens ?? [])];
      for (const [i, token] of tokens.entries()) {
        played++;
        yield {token, ...(i === 0 && step.wait !== undefined ? {wait: step.wait} : {}), ...(step.delayMs ? {delayMs: step.delayMs} : {})};
      }
    }
    if (plan.end !== "repeat" || played === 0) break;
  }
  yield {token: tok.IM_END};
}

/**
 * Fake log probabilities, fixed so tests can rely on them: the sampled token has ln(1/2), and the
 * alternatives after it (letters in English frequency order) ln(1/4), ln(1/8), ... so they sum below 1.
 */
export function scoreOf(token: number, top: number): TokenScore {
  const order = [token, ...ALTERNATIVES.filter((t) => t !== token)].slice(0, top);
  return {logprob: Math.log(0.5), top: order.map((t, i) => ({token: t, logprob: Math.log(0.5 ** (i + 1))}))};
}

/** Waits for ms or a promise; false when the signal aborts first. A promise that rejects rethrows (an engine failure). */
export function pause(what: Promise<unknown> | number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve, reject) => {
    const timer = typeof what === "number" ? setTimeout(() => done(true), what) : null;
    const onAbort = () => done(false);
    function done(ok: boolean, err?: unknown) {
      if (timer) clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if (err !== undefined) reject(err);
      else resolve(ok);
    }
    signal.addEventListener("abort", onAbort, {once: true});
    if (typeof what !== "number") what.then(() => done(true), (err: unknown) => done(true, err ?? new Error("the script's wait rejected")));
  });
}
