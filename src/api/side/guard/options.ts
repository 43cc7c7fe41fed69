// The chat request's ask for the streaming guard: `guard: true`, `guard: "<guard model id>"`,
// `guard: {model, chunk, flag}`, or the header `X-Svc-Guard: watch`. Everything the server cannot honour is
// refused here with a 400 naming the field and the rule, before the reply starts.

import {invalidField} from "../../../core/errors.ts";
import {GUARD_LIMITS} from "../../../side-models/guard/limits.ts";
import {StreamGuardRunner} from "../../../side-models/guard/runner.ts";
import {ROUTE_OF_KIND} from "../../../side-models/registry.ts";
import type {SideModels} from "../../../side-models/side-models.ts";

export const GUARD_HEADER = "x-svc-guard";
const HEADER_NAME = "X-Svc-Guard";
const OBJECT_KEYS = ["model", "chunk", "flag"] as const;

export interface GuardAsk {
  runner: StreamGuardRunner;
  /** Reply tokens per verdict. */
  chunk: number;
  /** Unsafe probability at which a stretch is flagged. */
  flag: number;
}

export interface GuardDefaults {
  /** SVC_GUARD_FLAG */
  flag: number;
}

/** null: the request does not ask for the guard (served exactly as without it). */
export function parseGuardAsk(raw: unknown, header: string | string[] | undefined, side: SideModels | null, defaults: GuardDefaults): GuardAsk | null {
  const byHeader = readHeader(header);
  if (!byHeader && (raw === undefined || raw === null || raw === false)) return null;
  let model: unknown;
  let modelParam = "guard";
  let chunk: number = GUARD_LIMITS.chunkDefault;
  let flag = defaults.flag;
  if (raw === undefined || raw === null || raw === false || raw === true) {
    // Asked by the header, or by `guard: true`: the loaded guard.
  } else if (typeof raw === "string") {
    model = raw;
  } else if (typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    const unknown = Object.keys(o).filter((k) => !(OBJECT_KEYS as readonly string[]).includes(k));
    if (unknown.length > 0) throw invalidField(`guard.${unknown[0]}`, `is not a guard option; the object takes ${OBJECT_KEYS.join(", ")}`);
    if (o.model !== undefined && o.model !== null) {
      if (typeof o.model !== "string") throw invalidField("guard.model", "must be a string naming a loaded streaming-guard model");
      model = o.model;
      modelParam = "guard.model";
    }
    if (o.chunk !== undefined && o.chunk !== null) {
      if (typeof o.chunk !== "number" || !Number.isInteger(o.chunk) || o.chunk < GUARD_LIMITS.chunkMin || o.chunk > GUARD_LIMITS.chunkMax) {
        throw invalidField("guard.chunk",
          `must be an integer from ${GUARD_LIMITS.chunkMin} to ${GUARD_LIMITS.chunkMax} (reply tokens per verdict; got ${JSON.stringify(o.chunk)})`);
      }
      chunk = o.chunk;
    }
    if (o.flag !== undefined && o.flag !== null) {
      if (typeof o.flag !== "number" || !Number.isFinite(o.flag) || o.flag < 0 || o.flag > 1) {
        throw invalidField("guard.flag", `must be a number from 0 to 1 (the Unsafe probability that flags a stretch; got ${JSON.stringify(o.flag)})`);
      }
      flag = o.flag;
    }
  } else {
    throw invalidField("guard", "must be true, false, the guard model's id, or an object {model, chunk, flag}");
  }
  return {runner: pickGuard(side, model, modelParam), chunk, flag};
}

function readHeader(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const values = Array.isArray(header) ? header : [header];
  for (const v of values) {
    if (v.trim().toLowerCase() !== "watch") {
      throw invalidField(HEADER_NAME, `the only mode is "watch" (the guard watches a reply and never changes it); got ${JSON.stringify(v)}`);
    }
  }
  return true;
}

function pickGuard(side: SideModels | null, model: unknown, param: string): StreamGuardRunner {
  const guards = side?.ofKind("stream-guard") ?? [];
  if (!side || guards.length === 0) {
    const loaded = side?.list().map((r) => r.id).join(", ");
    throw invalidField(param, `the streaming guard needs a stream-guard model in SVC_NPU_MODELS (nx3guard-stream-0.6b); ` +
      (loaded ? `it names ${loaded}` : "SVC_NPU_MODELS is not set"));
  }
  if (model === undefined) return asGuard(guards[0]!);
  const named = side.find(model);
  if (named?.kind === "stream-guard") return asGuard(named);
  if (named) throw invalidField(param, `${named.id} is a ${named.kind} model, not a streaming guard; send it to ${ROUTE_OF_KIND[named.kind]}`);
  throw invalidField(param, `"${String(model)}" is not a loaded streaming-guard model; loaded: ${guards.map((r) => r.id).join(", ")}`);
}

function asGuard(runner: unknown): StreamGuardRunner {
  if (!(runner instanceof StreamGuardRunner)) throw new Error("internal error: a stream-guard model is not served by the stream-guard runner");
  return runner;
}
