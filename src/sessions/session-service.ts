// Named sessions as the pipeline uses them (SVC_FORK=1): X-Svc-From starts a request from a kept state when
// the request repeats the kept history; X-Svc-Keep stores the state at the end of the reply under a name.
// Route-neutral: every dialect passes the two names through its GenerationRequest.

import type {SessionOutcome} from "../core/generation.ts";
import {exactLength, reusable, type CutPlan, type KeepHook, type ResumeState} from "../engine/index.ts";
import type {Logger} from "../observability/log.ts";
import type {SessionPort, SessionTicket} from "./session-port.ts";
import type {HandleRegistry} from "./handles.ts";

export class SessionService implements SessionPort {
  /** Keeps still being written, by name: a request from that name waits for it, so keep-then-from is never racy. */
  private readonly pending = new Map<string, Promise<unknown>>();

  constructor(private readonly registry: HandleRegistry, private readonly logger: Logger) {}

  async begin(names: {keep: string | null; from: string | null}, prompt: readonly number[], plan: CutPlan, historyEnd?: number): Promise<SessionTicket> {
    let from: SessionOutcome["from"] = null;
    let resume: ResumeState | null = null;
    if (names.from) {
      await this.pending.get(names.from)?.catch(() => undefined);
      const h = this.registry.lookup(names.from);
      if (!h) {
        from = "unknown";
      } else {
        // The request must repeat the history the kept reply answered (and may continue inside or after it): up to
        // that request's last client text. The reply header after it may differ: a template whose generation prompt
        // is not how it renders the answered turn (Qwen3 with thinking off opens the reply with an empty think block
        // that the history leaves out) must not turn every follow-up into "unmatched".
        const replied = h.replyStart > 0 ? h.replyStart : exactLength(h);
        const history = h.historyEnd !== null && h.historyEnd > 0 && h.historyEnd <= replied ? h.historyEnd : replied;
        const reuse = reusable(h, prompt, plan).length;
        from = reuse > 0 && reuse >= history ? "used" : "unmatched";
        if (from === "used") resume = {tokens: h.tokens, cuts: h.cuts, path: h.path, verify: h.verify};
      }
    }
    const ticket = this.registry.begin({keep: names.keep ?? undefined, from: names.from ?? undefined});
    const keepName = names.keep;
    let keep: KeepHook | null = null;
    let settle = () => {};
    if (keepName && ticket.keep === "ok") {
      // Registered now, not when the state is written: the client may send its next request (from this name)
      // the moment the reply ends, before the region has sealed and saved it.
      const written = new Promise<void>((resolve) => (settle = resolve));
      this.pending.set(keepName, written);
      void written.then(() => {
        if (this.pending.get(keepName) === written) this.pending.delete(keepName);
      });
      keep = (meta, write) => this.registry.keep(keepName, {...meta, ...(historyEnd !== undefined ? {historyEnd} : {})}, write).then(() => undefined);
    } else if (keepName) {
      this.logger.info("session handle not kept: every handle is in use (SVC_FORK_HANDLES)", {name: keepName});
    }
    return {
      outcome: {from, keep: ticket.keep === "ok" ? "accepted" : ticket.keep === "full" ? "full" : null},
      resume,
      keep,
      end: () => {
        ticket.release();
        settle();
      },
      answered: (released) => this.registry.noteAnswered(released),
    };
  }
}
