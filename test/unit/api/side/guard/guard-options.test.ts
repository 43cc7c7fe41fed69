// The chat request's guard field and X-Svc-Guard header: every form accepted, every refusal at its edge,
// each naming the field and the rule.

import {test} from "node:test";
import assert from "node:assert/strict";
import {parseGuardAsk} from "../../../../../src/api/side/guard/options.ts";
import {StreamGuardRunner} from "../../../../../src/side-models/guard/runner.ts";
import {SideModels, type SideRunner} from "../../../../../src/side-models/side-models.ts";
import type {SideKind} from "../../../../../src/side-models/registry.ts";
import {ApiError} from "../../../../../src/core/errors.ts";

function runner(id: string, kind: SideKind): SideRunner {
  const base = kind === "stream-guard" ? Object.create(StreamGuardRunner.prototype) : {};
  return Object.assign(base, {id, kind, path: "/m.gguf", describe: () => ({}), close: async () => undefined});
}

function sideWith(...runners: SideRunner[]): SideModels {
  const Ctor = SideModels as unknown as new (executor: unknown, runners: Map<string, SideRunner>, models: Map<string, unknown>) => SideModels;
  return new Ctor(null, new Map(runners.map((r) => [r.id, r])), new Map());
}

const GUARD = "nx3guard-stream-0.6b";
const side = sideWith(runner(GUARD, "stream-guard"), runner("nx3guard-gen-0.6b", "moderation"), runner("nx3.5-2b", "small-generation"));
const defaults = {flag: 0.8};

function refused(raw: unknown, header?: string | string[], s: SideModels | null = side): ApiError {
  try {
    parseGuardAsk(raw, header, s, defaults);
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return err;
  }
  assert.fail(`accepted ${JSON.stringify(raw)} / ${JSON.stringify(header)}`);
}

test("no ask: absent, null or false and no header", () => {
  for (const raw of [undefined, null, false]) assert.equal(parseGuardAsk(raw, undefined, side, defaults), null);
  // Without any side model, not asking is not an error either.
  assert.equal(parseGuardAsk(undefined, undefined, null, defaults), null);
});

test("the accepted forms: true, the id, the object, the header", () => {
  for (const [raw, header] of [[true, undefined], [GUARD, undefined], [{}, undefined], [{model: GUARD}, undefined], [undefined, "watch"],
    [false, "watch"], [true, " Watch "]] as const) {
    const ask = parseGuardAsk(raw, header, side, defaults)!;
    assert.equal(ask.runner.id, GUARD);
    assert.equal(ask.chunk, 16);
    assert.equal(ask.flag, 0.8);
  }
  assert.deepEqual({...parseGuardAsk({chunk: 4, flag: 0}, undefined, side, defaults)!, runner: null}, {runner: null, chunk: 4, flag: 0});
  assert.deepEqual({...parseGuardAsk({chunk: 128, flag: 1}, undefined, side, defaults)!, runner: null}, {runner: null, chunk: 128, flag: 1});
  assert.equal(parseGuardAsk(true, undefined, side, {flag: 0.3})!.flag, 0.3);
});

test("chunk: 4..128 integers; 3 and 129 refused", () => {
  for (const chunk of [3, 129, 0, -4, 16.5, "16"]) {
    const err = refused({chunk});
    assert.equal(err.param, "guard.chunk");
    assert.match(err.message, /^guard\.chunk: must be an integer from 4 to 128/);
  }
});

test("flag: 0..1; below and above refused", () => {
  for (const flag of [-0.01, 1.01, "0.5", Number.NaN]) {
    const err = refused({flag});
    assert.equal(err.param, "guard.flag");
    assert.match(err.message, /^guard\.flag: must be a number from 0 to 1/);
  }
});

test("unknown keys and other shapes are refused", () => {
  const err = refused({model: GUARD, mode: "stop"});
  assert.equal(err.param, "guard.mode");
  assert.match(err.message, /guard\.mode: is not a guard option; the object takes model, chunk, flag/);
  for (const raw of [1, [GUARD], {model: 3}]) assert.match(refused(raw).message, /^guard(\.model)?: must be/);
});

test("X-Svc-Guard: only `watch`", () => {
  for (const header of ["block", "", "watch,stop", ["watch", "stop"]]) {
    const err = refused(undefined, header);
    assert.equal(err.param, "X-Svc-Guard");
    assert.match(err.message, /X-Svc-Guard: the only mode is "watch"/);
  }
});

test("a model that is not loaded, or not a streaming guard, is refused naming it", () => {
  let err = refused("nx3guard-stream-9b");
  assert.match(err.message, /^guard: "nx3guard-stream-9b" is not a loaded streaming-guard model; loaded: nx3guard-stream-0.6b/);
  err = refused({model: "nx3guard-gen-0.6b"});
  assert.equal(err.param, "guard.model");
  assert.match(err.message, /nx3guard-gen-0.6b is a moderation model, not a streaming guard; send it to POST \/v1\/moderations/);
  err = refused("svc-nx3.8-flash-next");
  assert.match(err.message, /is not a loaded streaming-guard model/);
});

test("no side models, or none a guard: 400 naming SVC_NPU_MODELS", () => {
  let err = refused(true, undefined, null);
  assert.match(err.message, /^guard: the streaming guard needs a stream-guard model in SVC_NPU_MODELS \(nx3guard-stream-0.6b\); SVC_NPU_MODELS is not set/);
  err = refused(undefined, "watch", sideWith(runner("nx3guard-gen-0.6b", "moderation")));
  assert.match(err.message, /SVC_NPU_MODELS.*it names nx3guard-gen-0.6b/);
});
