// The streaming guard on a chat reply: watches the reply's text events as serveGeneration produces them and
// turns the guard's verdicts into extra chat chunks (`choices: []` plus `svc_guard`) or, for a body, into
// `svc_guard: {events, summary}`. It never holds, stops or changes the reply's own frames: verdicts are
// computed by the guard's worker off the reply's path and sent whenever they are ready.

import type {GenerationEvent} from "../../../core/generation.ts";
import type {TemplateMessage} from "../../../core/messages.ts";
import type {GuardLease} from "../../../side-models/guard/runner.ts";
import {GuardWatch, type GuardEvent, type GuardSummary} from "../../../side-models/guard/watch.ts";
import type {ChatWatcher} from "../../model-router.ts";
import type {GuardAsk} from "./options.ts";

/** What a client sees besides the verdicts: the reply was not watched (SVC_GUARD_STREAMS replies already are). */
export type GuardNotice = {event: "unwatched"; watched: number; message: string};
export type GuardWireEvent = GuardEvent | GuardNotice | ({event: "end"} & GuardSummary);

export interface ChatGuardSettings {
  /** SVC_GUARD_STREAMS */
  streams: number;
  /** SVC_GUARD_LAG */
  lagChars: number;
  /** SVC_GUARD_FINAL_S */
  finalS: number;
}

export interface ChatIdentity {
  id: string;
  created: number;
  model: string;
}

/** The text of the user's last message (the guard's `user` verdict reads it). */
export function lastUserText(messages: readonly TemplateMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") return typeof m.content === "string" ? m.content : "";
  }
  return "";
}

export class ChatGuard implements ChatWatcher {
  private readonly events: GuardWireEvent[] = [];
  private send: ((data: unknown) => void) | null = null;
  private readonly unsent: GuardWireEvent[] = [];
  private summary: GuardSummary | null = null;
  private readonly watch: GuardWatch | null;
  private readonly lease: GuardLease | null;
  private openGate: () => void = () => undefined;

  constructor(ask: GuardAsk, userText: string, private readonly who: ChatIdentity, private readonly settings: ChatGuardSettings) {
    this.lease = ask.runner.lease(settings.streams);
    if (!this.lease) {
      this.watch = null;
      this.emit({event: "unwatched", watched: settings.streams,
        message: `this reply is served without the guard: ${settings.streams} replies are already watched (SVC_GUARD_STREAMS)`});
      return;
    }
    // Verdicts wait for the reply's own decoding to finish: the guard and the main model share the CPU, and
    // overlapping them made an 80-token reply ~9x slower (the guard's context at one thread) to ~170x (at
    // two). The reply streams untouched; the guard reads behind it, skipping past the lag, within the final wait.
    const ready = new Promise<void>((resolve) => {
      this.openGate = resolve;
    });
    this.watch = new GuardWatch(this.lease, {chunk: ask.chunk, flag: ask.flag, lagChars: settings.lagChars, ready}, userText, (ev) => this.emit(ev));
  }

  see(ev: GenerationEvent): void {
    // Reply text only: reasoning and tool calls are not read.
    if (ev.type === "text") this.watch?.push(ev.text);
    else if (ev.type === "done") this.openGate();
  }

  attach(send: (data: unknown) => void): void {
    this.send = send;
    for (const ev of this.unsent.splice(0)) send(this.chunk(ev));
  }

  async settle(): Promise<void> {
    if (!this.watch) return;
    this.openGate();
    this.summary = await this.watch.finish(this.settings.finalS * 1000);
    this.lease?.release();
    if (this.send) this.send(this.chunk({event: "end", ...this.summary}));
  }

  close(): void {
    this.watch?.abort();
    this.openGate();
    this.lease?.release();
    this.send = null;
  }

  /** The non-streamed body's `svc_guard`: every event in order, and the summary (null when not watched). */
  finishBody<B extends object>(body: B): B {
    return {...body, svc_guard: this.bodyField()};
  }

  bodyField(): {events: GuardWireEvent[]; summary: GuardSummary | null} {
    return {events: [...this.events], summary: this.summary};
  }

  private emit(ev: GuardWireEvent): void {
    this.events.push(ev);
    if (this.send) this.send(this.chunk(ev));
    else this.unsent.push(ev);
  }

  /**
   * Shaped like the chat encoder's other choice-less chunks, but without `usage: null` even when usage was
   * asked for: the SDK's stream helper copies every chunk's top-level fields into its final completion, so
   * an `end` chunk after the usage chunk would erase the usage.
   */
  private chunk(ev: GuardWireEvent): Record<string, unknown> {
    return {id: this.who.id, object: "chat.completion.chunk", created: this.who.created, model: this.who.model, choices: [], svc_guard: ev};
  }
}
