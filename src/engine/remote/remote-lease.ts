// One request's hold on a replica slot: the decode on it, failover before the first token, and at release the
// named session's keep (remote-sessions.ts). Also how a request from a session starts on its replica's slot.

import type {DecodeEnd, DecodeJob, DecodeRun, DecodeStats, KeepHook, RegionLease, ReleaseOptions, ResumeState, RouteDecision, StartInfo} from "../engine.ts";
import type {Logger} from "../../observability/log.ts";
import {commonPrefix, reusableByPrefix} from "../kv/region-memory.ts";
import {ReplicaRefusedError, replicaApi, type ReplicaUnreachableError} from "./llama-server-api.ts";
import {remoteDecode, type RemoteDecodeDeps, type RemoteSlotRef} from "./remote-decode.ts";
import {describeState, slotFileName, writeDescriptor, type RemoteStateDescriptor} from "./remote-sessions.ts";

/** What a lease needs of the engine that owns the slots. */
export interface SlotHost {
  readonly logger: Logger;
  decodeDeps(lease: RemoteLease): RemoteDecodeDeps;
  lease(request: LeaseRequest, avoid: number | null, pinned: number | null): Promise<{region: number; decision: RouteDecision}>;
  replicaOf(region: number): number;
  target(region: number): RemoteSlotRef;
  /** What the slot holds (its last request's prompt and generated tokens, or a restored state). */
  heldBy(region: number): readonly number[];
  recordHeld(region: number, tokens: readonly number[]): void;
  /** Whether the slot's replica saves slot files: null until a save was tried. */
  savesSlots(region: number): boolean | null;
  noteSlotSaving(region: number, saves: boolean): void;
  recordFinished(region: number, stats: DecodeStats): void;
  markDown(region: number, err: ReplicaUnreachableError | Error): void;
  release(region: number): void;
}

export interface LeaseRequest {
  signal: AbortSignal;
  timeoutMs: number;
  prompt: readonly number[];
}

/** A request from a named session: the kept state and the replica that holds it. */
export interface SessionPin {
  replica: number;
  descriptor: RemoteStateDescriptor;
  resume: ResumeState;
}

export class RemoteLease implements RegionLease {
  private released = false;
  /** Set when the decode ended with a stop token or the budget (a cancelled or failed reply is not kept). */
  private finished = false;

  constructor(private readonly host: SlotHost, public regionId: number, readonly stats: DecodeStats, readonly start: StartInfo,
    private readonly request: LeaseRequest) {}

  decode(job: DecodeJob): DecodeRun {
    return this.track(remoteDecode(job, this.host.decodeDeps(this), this.stats));
  }

  private async *track(run: DecodeRun): DecodeRun {
    const end: DecodeEnd = yield* run;
    this.finished = end.reason !== "cancelled";
    return end;
  }

  /** The replica did not answer before any token was sent: take it out and continue on another replica's slot. */
  async failover(err: ReplicaUnreachableError): Promise<void> {
    const dead = this.regionId;
    this.host.markDown(dead, err);
    const {region, decision} = await this.host.lease(this.request, this.host.replicaOf(dead), null);
    this.host.release(dead);
    this.regionId = region;
    this.stats.route = decision;
  }

  async release(opts?: ReleaseOptions): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.host.recordFinished(this.regionId, this.stats);
    try {
      // Before the slot is free again: nobody else may overwrite the state before it is saved.
      if (opts?.keep && this.finished) await this.keep(opts.keep);
    } finally {
      this.host.release(this.regionId);
    }
  }

  /**
   * Hands the slot's state to the session layer. The slot holds the prompt and every generated token but the last,
   * which was sampled and never fed back (llama-server's rule); a slot save says exactly how many. The save comes
   * first, so the kept tokens are the saved ones.
   */
  private async keep(hook: KeepHook): Promise<void> {
    const {url, slot} = this.host.target(this.regionId);
    const held = this.host.heldBy(this.regionId);
    let tokens = held.slice(0, Math.max(this.request.prompt.length, held.length - 1));
    let slotFile: string | null = null;
    if (this.host.savesSlots(this.regionId) !== false) {
      const name = slotFileName(tokens);
      try {
        const saved = await replicaApi.slotFile(url, slot, "save", name);
        this.host.noteSlotSaving(this.regionId, true);
        tokens = held.slice(0, saved.tokens);
        slotFile = name;
      } catch (err) {
        if (err instanceof ReplicaRefusedError && err.status === 501) {
          this.host.noteSlotSaving(this.regionId, false);
          this.host.logger.info("engine replica does not save slots (start it with --slot-save-path): " +
            "a session's state lasts while its slot is not reused", {url});
        } else {
          this.host.logger.warn("could not save the session's slot on its replica; the session continues while the slot still holds it", {url, slot,
            error: (err as Error).message});
        }
      }
    }
    await hook({tokens, cuts: [tokens.length], replyStart: this.request.prompt.length},
      (path) => writeDescriptor(path, describeState(url, slotFile, tokens.length)));
  }
}

/**
 * How a request from a named session starts on the slot it was given: nothing to do when the slot still holds the
 * kept state; the replica's slot file loaded when it does not; otherwise the replica evaluates what the slot lacks.
 */
export async function resumeOnSlot(host: SlotHost, region: number, pin: SessionPin, prompt: readonly number[], routed: number): Promise<StartInfo> {
  const kept = pin.resume.tokens;
  const fromState = reusableByPrefix({tokens: kept, cuts: [kept.length]}, prompt).length;
  if (host.replicaOf(region) !== pin.replica) return routedStart(routed, "session_replica_busy");
  if (commonPrefix(host.heldBy(region), kept) >= kept.length) return {reused: fromState, source: "memory", miss: null};
  if (pin.descriptor.slotFile === null) return routedStart(routed, "session_slot_reused");
  const {url, slot} = host.target(region);
  try {
    const restored = await replicaApi.slotFile(url, slot, "restore", pin.descriptor.slotFile);
    host.recordHeld(region, kept.slice(0, restored.tokens));
    return {reused: Math.min(fromState, restored.tokens), source: "handle", miss: null};
  } catch (err) {
    // A failed restore leaves the slot empty (llama-server clears it).
    host.recordHeld(region, []);
    host.logger.warn("could not load the session's slot file on its replica; the replica evaluates the prompt", {url, slot, file: pin.descriptor.slotFile,
      error: (err as Error).message});
    return {reused: 0, source: "none", miss: "session_restore_failed"};
  }
}

/** A request's start as its routing expected it. */
export function routedStart(expected: number, miss: string | null = null): StartInfo {
  return {reused: expected, source: expected > 0 ? "memory" : "none", miss: miss ?? (expected > 0 ? null : "cold")};
}
