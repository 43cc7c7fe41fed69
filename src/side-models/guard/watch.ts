// One watched reply: the guard's reading of a growing reply, off the reply's own path. The reply pushes its
// text as it is produced and never waits; a worker takes the text in stretches of `chunk` guard tokens and
// asks the judge for one verdict per stretch (one side-executor pass each), one at a time. When the worker
// falls behind (or may not run yet), the text it has not reached waits up to `lagChars` characters; past
// that the oldest unreached text is dropped and a `skipped` event says how much. The guard reads the first `windowTokens`
// tokens of user message plus reply, then says it has stopped.
//
// Pure apart from the injected judge (the model) and timers, so the accounting is unit-tested on fake scores.

import {GUARD_LIMITS, userWindow} from "./limits.ts";
import type {Risk} from "./prompt.ts";

export interface Verdict {
  risk: Risk;
  /** Probability of `risk` among the three labels. */
  prob: number;
  /** Probability of Unsafe among the three labels. */
  unsafe: number;
  /** The most likely category when the risk is not Safe; null when Safe. */
  category: string | null;
}

/** The guard model as the watch sees it. Each judge call is one side-executor pass. */
export interface GuardJudge {
  tokenize(text: string): number[];
  detokenize(tokens: readonly number[]): string;
  judgeUser(user: readonly number[], signal: AbortSignal): Promise<Verdict>;
  /** `points`: where earlier verdicts ended (reply token counts), so the judge can reuse their work exactly. */
  judgeReply(user: readonly number[], reply: readonly number[], points: readonly number[], signal: AbortSignal): Promise<Verdict>;
}

export interface WatchSettings {
  /** Reply tokens per verdict (4..128). */
  chunk: number;
  /** Unsafe probability at which a stretch is flagged. */
  flag: number;
  /** SVC_GUARD_LAG: characters of unreached text kept before the oldest is dropped. */
  lagChars: number;
  windowTokens?: number;
  userTokens?: number;
  /**
   * Resolves when verdict passes may start. On a CPU shared with the main model a pass that overlaps the
   * reply's own decoding slows both many times over, so the chat route opens this when its reply is done.
   */
  ready?: Promise<void>;
}

export type GuardEvent =
  | {event: "user"; risk: Risk; prob: number; category: string | null}
  | {event: "chunk"; tokens: number; risk: Risk; prob: number; unsafe: number; category: string | null; flagged: boolean}
  /** Unreached text dropped at reply token `tokens` (the guard's reading resumes after it). */
  | {event: "skipped"; chars: number; tokens: number}
  /** The window is read; the rest of the reply is not watched. */
  | {event: "stopped"; tokens: number; window_tokens: number}
  /** A verdict could not be had (e.g. the side executor was busy past SVC_QUEUE_TIMEOUT); watching ends. */
  | {event: "error"; message: string};

export interface GuardSummary {
  /** Highest Unsafe probability of any reply stretch; null when no stretch was judged. */
  peak_unsafe: number | null;
  flagged_chunks: number;
  /** Reply tokens read when the first flagged verdict was made (the end of that stretch); null when none. */
  first_flag_token: number | null;
  /** Reply verdicts made. */
  chunks: number;
  /** Reply tokens the guard read. */
  tokens: number;
  skipped_chars: number;
  stopped: boolean;
  /** Every verdict owed was made (false: the final wait ran out or a verdict failed). */
  complete: boolean;
}

/** Probabilities on the wire: enough digits to compare with `flag`, not the float's noise. */
export const round = (p: number): number => Math.round(p * 1e6) / 1e6;

export class GuardWatch {
  readonly user: number[];
  private pending = "";
  private readonly view: number[] = [];
  private readonly points: number[] = [];
  private ended = false;
  /** Text arrived after the window was full. */
  private beyondWindow = false;
  private state: "watching" | "stopped" | "failed" | "aborted" = "watching";
  private skippedChars = 0;
  private skippedReported = 0;
  private lastRisk: Risk = "Safe";
  private peak: number | null = null;
  private flagged = 0;
  private firstFlag: number | null = null;
  private verdicts = 0;
  private wake: (() => void) | null = null;
  private readonly ac = new AbortController();
  private readonly windowTokens: number;
  private readonly done: Promise<void>;

  constructor(private readonly judge: GuardJudge, private readonly settings: WatchSettings, userText: string,
    private readonly emit: (ev: GuardEvent) => void) {
    this.windowTokens = settings.windowTokens ?? GUARD_LIMITS.windowTokens;
    this.user = userWindow(judge.tokenize(userText), settings.userTokens ?? GUARD_LIMITS.userTokens);
    this.done = this.work();
  }

  /** More reply text (never blocks: the reply does not wait for the guard). */
  push(text: string): void {
    if (this.state !== "watching" || this.ended || text === "") return;
    if (this.room() <= 0) {
      this.beyondWindow = true;
    } else {
      this.pending += text;
      let over = this.pending.length - this.settings.lagChars;
      if (over > 0) {
        // Never split a surrogate pair: the kept text must stay valid.
        if (isLowSurrogate(this.pending.charCodeAt(over))) over++;
        this.pending = this.pending.slice(over);
        this.skippedChars += over;
      }
    }
    this.poke();
  }

  /**
   * The reply is over: the worker judges what is left. Resolves with the summary once every verdict owed
   * is made, or after `waitMs` with what was made by then (the rest is abandoned).
   */
  async finish(waitMs: number): Promise<GuardSummary> {
    this.ended = true;
    this.poke();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.done.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), Math.max(0, waitMs));
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) this.abort();
    return this.summary(!timedOut && this.state !== "failed");
  }

  /** Stops watching at once (the request ended early or failed). A pass already waiting is withdrawn. */
  abort(): void {
    if (this.state === "watching") this.state = "aborted";
    this.ac.abort(new Error("the guard stopped watching"));
    this.poke();
  }

  summary(complete: boolean): GuardSummary {
    return {
      peak_unsafe: this.peak === null ? null : round(this.peak),
      flagged_chunks: this.flagged,
      first_flag_token: this.firstFlag,
      chunks: this.verdicts,
      tokens: this.view.length,
      skipped_chars: this.skippedChars,
      stopped: this.state === "stopped",
      complete,
    };
  }

  private room(): number {
    return this.windowTokens - this.user.length - this.view.length;
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private get live(): boolean {
    return this.state === "watching";
  }

  private async work(): Promise<void> {
    try {
      await this.settings.ready;
      if (!this.live) return;
      const u = await this.judge.judgeUser(this.user, this.ac.signal);
      if (!this.live) return;
      this.emit({event: "user", risk: u.risk, prob: round(u.prob), category: u.category});
      for (;;) {
        if (!this.live) return;
        if (this.room() <= 0) {
          if (this.pending !== "" || this.beyondWindow) {
            this.state = "stopped";
            this.pending = "";
            this.emit({event: "stopped", tokens: this.view.length, window_tokens: this.windowTokens});
            return;
          }
          if (this.ended) return;
          await this.sleep();
          continue;
        }
        const stretch = this.nextStretch(Math.min(this.settings.chunk, this.room()));
        if (!stretch) {
          if (this.ended && this.pending === "") break;
          await this.sleep();
          continue;
        }
        this.reportSkipped();
        this.view.push(...stretch);
        const v = await this.judge.judgeReply(this.user, this.view, this.points, this.ac.signal);
        if (!this.live) return;
        this.points.push(this.view.length);
        this.record(v);
      }
      this.reportSkipped();
    } catch (err) {
      if (!this.live) return;
      this.state = "failed";
      this.emit({event: "error", message: `the guard stopped watching: ${(err as Error)?.message ?? String(err)}`});
    }
  }

  /**
   * The next stretch of `need` tokens from the unreached text, or null when there is not yet enough (a
   * finished reply gives what is left). The last token of unfinished text is held back: more text may
   * change how it tokenizes.
   */
  private nextStretch(need: number): number[] | null {
    if (this.pending === "") return null;
    // A token covers at least one byte: fewer bytes than tokens needed cannot make a stretch (saves tokenizing).
    if (!this.ended && Buffer.byteLength(this.pending) <= need) return null;
    const toks = this.judge.tokenize(this.pending);
    const stable = this.ended ? toks.length : toks.length - 1;
    if (!this.ended && stable < need) return null;
    const want = Math.min(need, stable);
    if (want <= 0) {
      this.pending = "";
      return null;
    }
    // Consume exactly the text the tokens spell; a cut inside a multi-byte character does not spell a
    // prefix, so step back to one that does.
    for (let take = want; take > 0; take--) {
      const text = this.judge.detokenize(toks.slice(0, take));
      if (text.length > 0 && this.pending.startsWith(text)) {
        this.pending = this.pending.slice(text.length);
        return toks.slice(0, take);
      }
    }
    // No prefix spells out exactly (a tokenizer that normalises text): take the tokens and as many characters.
    const taken = toks.slice(0, want);
    this.pending = want >= toks.length ? "" : this.pending.slice(Math.min(this.pending.length, this.judge.detokenize(taken).length));
    return taken;
  }

  private reportSkipped(): void {
    const chars = this.skippedChars - this.skippedReported;
    if (chars <= 0) return;
    this.skippedReported = this.skippedChars;
    this.emit({event: "skipped", chars, tokens: this.view.length});
  }

  private record(v: Verdict): void {
    this.verdicts++;
    const flagged = v.unsafe >= this.settings.flag;
    if (this.peak === null || v.unsafe > this.peak) this.peak = v.unsafe;
    if (flagged) {
      this.flagged++;
      this.firstFlag ??= this.view.length;
    }
    // Sent when the label is not Safe or changes (a return to Safe is a change worth telling).
    if (v.risk !== "Safe" || v.risk !== this.lastRisk) {
      this.emit({event: "chunk", tokens: this.view.length, risk: v.risk, prob: round(v.prob), unsafe: round(v.unsafe), category: v.category, flagged});
    }
    this.lastRisk = v.risk;
  }
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
