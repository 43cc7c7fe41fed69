// Named sessions as the pipeline sees them (SVC_FORK=1): the pipeline asks at a request's start which kept state
// it may resume from and how to keep its end state; session-service.ts answers. The port lives beside its
// implementation, not in the pipeline, so that sessions never import the pipeline.

import type {SessionOutcome} from "../core/generation.ts";
import type {CutPlan, KeepHook, ResumeState} from "../engine/index.ts";

export interface SessionPort {
  /** At request start: reserves the keep name, looks up the from name. Throws nothing. */
  begin(names: {keep: string | null; from: string | null}, prompt: readonly number[], plan: CutPlan, historyEnd?: number): Promise<SessionTicket>;
}

export interface SessionTicket {
  outcome: SessionOutcome;
  /** The kept state to start from (X-Svc-From: used). */
  resume: ResumeState | null;
  /** Stores the end state (X-Svc-Keep accepted). */
  keep: KeepHook | null;
  /** Ends the request's hold on its names (after the keep, if any, settled). */
  end(): void;
  /** The reply was answered; `released` settles once its state is sealed and kept. */
  answered?(released: Promise<void>): void;
}

