// Which grammar binds the reply, token by token. A reply is not one grammar from its first token when
// it can think first (the reasoning block is free, the JSON starts after it), when a tool call may come
// instead of the JSON (a free preamble, then the schema from the first `{`), or when tool calls are
// enforced (a call binds once it opens, then one grammar per parameter so they may come in any order).
// The steering watches the text the engine generates and tells it, between steps, what binds next.

import type {DecodeSteering, GrammarRef, SteerAction} from "../engine/index.ts";
import type {CallBoundary, CallPhase, ToolCallGrammars} from "./tool-call-grammars.ts";
import {matchStart} from "./reply/parser.ts";

export interface SteeringText {
  /** Text of one token in context (the steering's own incremental view of the reply). */
  push(token: number): string;
  /** Tokens for a text the steering places (the part of a token up to a boundary). */
  tokenize(text: string): number[];
}

export interface SteeringPlan {
  /** "inside": the prompt opened the reasoning block; "force-open": the reply must start by opening it
   * (thinking is on and the answer is bound from its first token); "may-open": the model may open it first
   * (the answer starts free); "none": no block to wait for. */
  reasoning: {mode: "inside" | "force-open" | "may-open" | "none"; open: string; close: string;
    /** Tokens the block may take (the request's thinking budget); the steering closes it then. Absent: no limit. */
    budget?: number | null};
  answer:
    /** The answer is this JSON schema; with `escape`, a free preamble (capped) may come first, then the
     * schema binds from the first `{` (or when the cap is reached); a tool call may open in the preamble. */
    | {kind: "schema"; grammar: GrammarRef; escape: {budget: number; braceToken: number} | null}
    /** A tool call must come: bound from the answer's first token. */
    | {kind: "call"}
    /** Free text; tool calls (when `calls` is set) are bound once their opener appears. */
    | {kind: "free"};
  /** Enforced tool calls; null: calls are parsed but not bound. */
  calls: ToolCallGrammars | null;
  /** After a call closes, more calls may follow. */
  parallel: boolean;
}

/** The spec's upper bound on the free preamble before a JSON answer when tools are offered. */
export const MAX_PREAMBLE_TOKENS = 1024;

type State =
  | {kind: "maybe-thinking"; text: string}
  | {kind: "thinking"; text: string}
  | {kind: "answer-start"}
  | {kind: "preamble"; text: string; tokens: number; cap: number}
  | {kind: "free"; text: string}
  /** Calls can only start the answer (no opener): watched until its start is, or cannot be, a call's. */
  | {kind: "start"; text: string; tokens: number[]}
  | {kind: "phase"; phase: CallPhase; text: string}
  | {kind: "json"}
  | {kind: "ended"};

export class ReplySteering implements DecodeSteering {
  private state: State;
  /** Grammar to bind before the first token (the answer or the forced opener). */
  readonly initial: GrammarRef | null;
  /** Text dropped before the JSON (the preamble) ends here; the pipeline drops content until then. */
  jsonStarted = false;
  /** Calls whose grammar closed (enforced calls only). */
  callsClosed = 0;
  /** Tokens spent in the preamble (for the log). */
  preambleTokens = 0;
  /** Tokens seen so far (the budget left after thinking sets the preamble's cap). */
  private seen = 0;
  private preambleCap = 0;
  /** Tokens written inside the reasoning block, once it is open (the thinking budget counts these). */
  reasoningTokens = 0;
  /** The steering closed the block because the thinking budget ran out. */
  budgetClosed = false;
  /** The model sampled a stop token before its required answer started, and the answer was opened instead (onStop). */
  stopOverruled = false;
  private lastToken = -1;

  constructor(private readonly plan: SteeringPlan, private readonly text: SteeringText) {
    if (plan.reasoning.mode === "inside") {
      this.state = {kind: "thinking", text: ""};
      this.initial = null;
    } else if (plan.reasoning.mode === "may-open") {
      this.state = {kind: "maybe-thinking", text: ""};
      this.initial = null;
    } else if (plan.reasoning.mode === "force-open") {
      this.state = {kind: "thinking", text: ""};
      this.initial = literalGrammar(plan.reasoning.open);
    } else {
      this.state = {kind: "answer-start"};
      this.initial = this.answerBinding();
    }
  }

  /** What binds when the answer starts (after reasoning, or at the reply's start); sets the state. */
  private answerBinding(): GrammarRef | null {
    const {answer, calls} = this.plan;
    const cap = answer.kind === "schema" && answer.escape
      // The spec's cap: half of what the budget leaves after thinking, at most 1,024 tokens.
      ? Math.min(MAX_PREAMBLE_TOKENS, Math.floor(Math.max(0, answer.escape.budget - this.seen) / 2))
      : 0;
    if (answer.kind === "schema" && (!answer.escape || cap === 0)) {
      this.state = {kind: "json"};
      this.jsonStarted = true;
      return answer.grammar;
    }
    if (answer.kind === "schema") {
      this.preambleCap = cap;
      this.state = {kind: "preamble", text: "", tokens: 0, cap};
      return null;
    }
    if (answer.kind === "call" && calls) {
      const phase: CallPhase = {kind: "open", fromReplyStart: true};
      this.state = {kind: "phase", phase, text: ""};
      return calls.grammar(phase);
    }
    if (calls?.openedByPrompt) {
      // The prompt ends with a call's opener (Functionary's `>>>`): the reply starts in the open phase after it.
      const phase: CallPhase = {kind: "open", fromReplyStart: false};
      this.state = {kind: "phase", phase, text: ""};
      return calls.grammar(phase);
    }
    this.state = calls && calls.openers.length === 0 && calls.start ? {kind: "start", text: "", tokens: []} : {kind: "free", text: ""};
    return null;
  }

  onToken(token: number): SteerAction | null {
    this.seen++;
    const piece = this.text.push(token);
    this.lastToken = token;
    const st = this.state;
    if (st.kind !== "thinking") return this.onToken0(piece);
    // The opener itself (when the reply writes it) is not thinking; everything after it is.
    if (this.plan.reasoning.mode === "inside" || st.text.length >= this.plan.reasoning.open.length) this.reasoningTokens++;
    const action = this.onToken0(piece);
    const budget = this.plan.reasoning.budget;
    if (this.state.kind !== "thinking" || budget === undefined || budget === null || this.reasoningTokens < budget) return action;
    // Out of budget: this token is replaced by the closing marker, and the answer starts as if the model
    // had closed the block itself.
    this.budgetClosed = true;
    const grammar = this.answerBinding();
    return {replaceWith: this.text.tokenize(this.plan.reasoning.close), bind: {grammar}};
  }

  /**
   * A stop token was sampled. A reply whose answer must be the schema's JSON (or a call) may not end before that
   * answer starts: in the free preamble beside tools, the JSON opens in the stop token's place, as at a `{`; inside
   * the reasoning block, the block closes and the answer follows, as when the thinking budget closes it. Anywhere
   * else the reply ends.
   */
  onStop(_token: number): SteerAction | null {
    const {answer} = this.plan;
    const st = this.state;
    if (st.kind === "preamble" && answer.kind === "schema" && answer.escape) {
      this.state = {kind: "json"};
      this.jsonStarted = true;
      this.stopOverruled = true;
      return {replaceWith: [answer.escape.braceToken], bind: {grammar: answer.grammar, accept: [answer.escape.braceToken]}};
    }
    if (st.kind === "thinking" && (answer.kind === "schema" || answer.kind === "call")) {
      this.stopOverruled = true;
      const grammar = this.answerBinding();
      return {replaceWith: this.text.tokenize(this.plan.reasoning.close), bind: {grammar}};
    }
    return null;
  }

  /** Steps the state with a piece of text (a token's, or text carried over from a state just left). */
  private onToken0(piece: string): SteerAction | null {
    const st = this.state;
    switch (st.kind) {
      case "maybe-thinking": {
        st.text += piece;
        const head = st.text.trimStart();
        const {open} = this.plan.reasoning;
        if (head.startsWith(open)) {
          this.state = {kind: "thinking", text: ""};
          return this.onToken0(head);
        }
        if (open.startsWith(head)) return null;
        // No reasoning block: the answer started with this text.
        const bind = this.answerBinding();
        if (bind) throw new Error("a reply that may open a reasoning block must start free");
        return this.onToken0(st.text);
      }
      case "thinking": {
        const {open, close, mode} = this.plan.reasoning;
        const wasOpen = st.text.length >= open.length;
        st.text += piece;
        const at = st.text.indexOf(close);
        // The forced opener's grammar ends with the opener; the block itself is free.
        if (at < 0) return mode === "force-open" && !wasOpen && st.text.length >= open.length ? {bind: {grammar: null}} : null;
        const end = at + this.plan.reasoning.close.length;
        const overhang = st.text.length - end;
        const grammar = this.answerBinding();
        if (overhang === 0) return {bind: {grammar}};
        // The token ran past the marker: keep the part up to it, so the answer's grammar sees its start.
        return {replaceWith: this.text.tokenize(piece.slice(0, piece.length - overhang)), bind: {grammar}};
      }
      case "preamble":
        return this.onPreamble(st, piece);
      case "free":
        return this.onFree(st, piece);
      case "start": {
        // Whitespace before the call is written before its grammar binds: not accepted by it.
        if (st.text === "" && piece.trim() === "") return null;
        st.text += piece;
        st.tokens.push(this.lastToken);
        const m = matchStart(st.text, this.plan.calls!.start!);
        if (m === "partial") return null;
        if (m === "no") {
          this.state = {kind: "free", text: ""};
          return null;
        }
        // The answer is a call: bound from its start, the tokens written so far accepted by the open phase.
        const phase: CallPhase = {kind: "open", fromReplyStart: true};
        this.state = {kind: "phase", phase, text: st.text};
        return {bind: {grammar: this.plan.calls!.grammar(phase), accept: st.tokens}};
      }
      case "phase":
        return this.onPhase(st, piece);
      default:
        return null;
    }
  }

  private onPreamble(st: Extract<State, {kind: "preamble"}>, piece: string): SteerAction | null {
    const answer = this.plan.answer as Extract<SteeringPlan["answer"], {kind: "schema"}>;
    const escape = answer.escape!;
    st.tokens++;
    this.preambleTokens = st.tokens;
    const openers = this.plan.calls?.openers ?? [];
    const brace = piece.indexOf("{");
    st.text += piece;
    const found = firstOpener(st.text, openers);
    if (found) {
      // A tool call instead of the JSON: bind it when calls are enforced; otherwise it is only parsed.
      return this.openCall(st.text, piece, found);
    }
    if (brace >= 0 && !openers.some((o) => couldBecome(st.text, o))) {
      // The JSON starts at this `{`: text before it is dropped, and the schema binds already past it.
      this.state = {kind: "json"};
      this.jsonStarted = true;
      return {replaceWith: [escape.braceToken], bind: {grammar: answer.grammar, accept: [escape.braceToken]}};
    }
    if (st.tokens >= st.cap) {
      this.state = {kind: "json"};
      this.jsonStarted = true;
      return {bind: {grammar: answer.grammar}};
    }
    return null;
  }

  private onFree(st: Extract<State, {kind: "free"}>, piece: string): SteerAction | null {
    const openers = this.plan.calls?.openers ?? [];
    if (openers.length === 0) return null;
    st.text += piece;
    const found = firstOpener(st.text, openers);
    if (!found) {
      // Keep only what could still be the start of an opener.
      const longest = Math.max(...openers.map((o) => o.length));
      if (st.text.length > longest * 4) st.text = st.text.slice(-longest);
      return null;
    }
    return this.openCall(st.text, piece, found);
  }

  /** An opener was written freely: bind the call's grammar right after it (the open phase continues from there). */
  private openCall(text: string, piece: string, found: {at: number; opener: string}): SteerAction | null {
    const calls = this.plan.calls;
    if (!calls) {
      this.state = {kind: "ended"};
      return null;
    }
    const end = found.at + found.opener.length;
    const overhang = text.length - end;
    const phase: CallPhase = {kind: "open", fromReplyStart: false};
    this.state = {kind: "phase", phase, text: ""};
    const grammar = calls.grammar(phase);
    if (overhang === 0) return {bind: {grammar}};
    return {replaceWith: this.text.tokenize(piece.slice(0, piece.length - overhang)), bind: {grammar}};
  }

  private onPhase(st: Extract<State, {kind: "phase"}>, piece: string): SteerAction | null {
    const calls = this.plan.calls!;
    st.text += piece;
    const b: CallBoundary | null = calls.boundary(st.phase, st.text);
    if (!b) return null;
    let next: CallPhase | null;
    switch (b.kind) {
      case "named":
        next = {kind: "argument", tool: b.name, written: []};
        break;
      case "parameter":
        next = st.phase.kind === "argument" ? {kind: "argument", tool: st.phase.tool, written: [...st.phase.written, b.name]} : null;
        break;
      case "closed":
        this.callsClosed++;
        next = calls.afterCall();
        break;
      case "more":
        next = {kind: "argument", tool: b.name, written: []};
        break;
      case "end":
      case "text":
        next = null;
        break;
    }
    if (next) {
      this.state = {kind: "phase", phase: next, text: ""};
      return {bind: {grammar: calls.grammar(next)}};
    }
    // No call is open and free text follows (the content's recipient was named, or a recipient message's call block
    // ended): watched for openers. The call limit still ends the reply once it is reached.
    if (b.kind === "text") {
      this.state = {kind: "free", text: ""};
      return {bind: {grammar: null}};
    }
    // A closed list or section ends the calls: its grammar is complete, so the reply ends there.
    if (b.kind !== "closed" || !this.plan.parallel) {
      this.state = {kind: "ended"};
      return null;
    }
    // More may follow a call: free text watched for the next opener, or, before a JSON answer, the preamble again.
    this.state = this.plan.answer.kind === "schema"
      ? {kind: "preamble", text: "", tokens: this.preambleTokens, cap: this.preambleCap}
      : {kind: "free", text: ""};
    return {bind: {grammar: null}};
  }
}

/** The opener that occurs first in `text` (the longer one where two start at the same place), if any. */
function firstOpener(text: string, openers: readonly string[]): {at: number; opener: string} | null {
  let best: {at: number; opener: string} | null = null;
  for (const opener of openers) {
    const at = text.indexOf(opener);
    if (at >= 0 && (best === null || at < best.at || (at === best.at && opener.length > best.opener.length))) best = {at, opener};
  }
  return best;
}

/** Whether some continuation of `text` contains `opener` starting within its last opener.length chars. */
function couldBecome(text: string, opener: string): boolean {
  for (let k = Math.min(opener.length - 1, text.length); k > 0; k--) {
    if (opener.startsWith(text.slice(text.length - k))) return true;
  }
  return false;
}

/** A grammar that is exactly one literal text. */
export function literalGrammar(text: string): GrammarRef {
  const gbnf = `root ::= ${JSON.stringify(text)}`;
  return {gbnf, key: `literal:${text}`};
}
