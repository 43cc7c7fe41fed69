// The Python the image engine runs on: stable-diffusion.cpp ships to Node as nothing maintained, but to Python as the
// `inferna` wheel (prebuilt for the CPU, no dependencies, Python 3.12 or newer). The server makes a virtual environment
// of its own under the cache directory (beside SVC_MODELS_DIR: image-python/venv), installs the pinned wheel there
// with its sha256 checked (pip --require-hashes), and reuses it while its marker records the same pins and the same
// interpreter. Nothing is installed into the system's Python. pip uses whatever index or proxy it is configured with.
//
// SVC_PYTHON names the interpreter. One that already imports inferna (say with the GPU build, inferna-cuda12,
// installed by hand) is used as it is, without a venv; otherwise a venv is made from it.

import {execFile} from "node:child_process";
import {existsSync, readdirSync} from "node:fs";
import {mkdir, open, readFile, rm, stat, unlink, writeFile} from "node:fs/promises";
import {homedir} from "node:os";
import {dirname, join} from "node:path";
import type {Logger} from "../../observability/log.ts";

/** The engine's wheel, pinned with the sha256 of each platform's file (pip refuses any other bytes). */
export const INFERNA_PIN = "inferna==0.7.0";
export const INFERNA_HASHES: readonly string[] = [
  // manylinux2014 x86_64, cp312-abi3
  "1d1603b86eb8fb23bf65ec6e5b328445537472d4f46167e274cdaef51980e384",
];
export const MIN_PYTHON: readonly [number, number] = [3, 12];

export class PythonEnvError extends Error {
  override readonly name = "PythonEnvError";
}

const INSTALL_TIMEOUT_MS = 20 * 60_000;

interface RunResult {
  ok: boolean;
  output: string;
}

function run(cmd: string, args: string[], timeoutMs = 30_000, env: NodeJS.ProcessEnv = process.env): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, {encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env}, (err, stdout, stderr) => {
      resolve({ok: !err, output: `${stdout ?? ""}${stderr ?? ""}${err && !stderr ? err.message : ""}`.trim()});
    });
  });
}

export interface PythonFound {
  path: string;
  version: string;
}

/** The Python interpreters worth asking, in order: SVC_PYTHON alone when set; else the usual names and pyenv's versions. */
export function pythonCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  if (env.SVC_PYTHON) return [env.SVC_PYTHON];
  const names = ["python3.13", "python3.12", "python3.14", "python3"];
  // pyenv's shims answer `python3.12` only for the versions made global; the interpreters themselves always run.
  const pyenvRoot = env.PYENV_ROOT ?? join(homedir(), ".pyenv");
  const versions = join(pyenvRoot, "versions");
  const pyenv = existsSync(versions)
    ? readdirSync(versions).filter((v) => /^3\.\d+\.\d+$/.test(v)).sort(byVersionDesc).map((v) => join(versions, v, "bin", "python3"))
    : [];
  return [...names, ...pyenv];
}

function byVersionDesc(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i]! - pa[i]!;
  return 0;
}

const atLeast = (v: number[], min: readonly number[]) => v[0]! > min[0]! || (v[0] === min[0] && v[1]! >= min[1]!);

/** The first candidate at MIN_PYTHON or newer; a PythonEnvError listing what was found and what to do otherwise. */
export async function findPython(env: NodeJS.ProcessEnv = process.env): Promise<PythonFound> {
  const seen: string[] = [];
  for (const cmd of pythonCandidates(env)) {
    const r = await run(cmd, ["-c", "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"], 30_000, env);
    if (!r.ok) continue;
    const [path, version] = r.output.split("\n").map((l) => l.trim());
    if (!path || !version) continue;
    if (atLeast(version.split(".").map(Number), MIN_PYTHON)) return {path, version};
    seen.push(`${cmd} is ${version}`);
  }
  const want = MIN_PYTHON.join(".");
  if (env.SVC_PYTHON) {
    throw new PythonEnvError(`SVC_PYTHON=${env.SVC_PYTHON} ${seen.length ? `is Python ${seen[0]!.split(" is ")[1]}` : "did not run"}; ` +
      `the image engine (inferna) needs Python ${want} or newer: point SVC_PYTHON at one`);
  }
  throw new PythonEnvError(`the image engine (inferna) needs Python ${want} or newer, and none was found ` +
    `(${seen.length ? seen.join(", ") : "no python3 runs"}); install one (python3.12 or python3.13, or through pyenv) ` +
    "or set SVC_PYTHON to its path");
}

export function imagePythonDir(modelsDir: string): string {
  return join(dirname(modelsDir), "image-python");
}

/** The requirements file pip checks every byte against. */
export function requirements(): string {
  return `${INFERNA_PIN} ${INFERNA_HASHES.map((h) => `--hash=sha256:${h}`).join(" ")}\n`;
}

/**
 * The interpreter the image worker runs on: SVC_PYTHON's own when it already has inferna, else the project's venv
 * (made or remade first when its marker does not match).
 */
export async function imagePython(opts: {modelsDir: string; logger: Logger; env?: NodeJS.ProcessEnv}): Promise<string> {
  const env = opts.env ?? process.env;
  const base = await findPython(env);
  if (env.SVC_PYTHON && (await run(base.path, ["-c", "import inferna.sd"])).ok) return base.path;
  const root = imagePythonDir(opts.modelsDir);
  const venv = join(root, "venv");
  const python = join(venv, "bin", "python");
  const marker = join(venv, "svc-pins.json");
  const want = `${JSON.stringify({requirements: requirements(), python: base.path, version: base.version}, null, 1)}\n`;
  const ready = async () => (await readFile(marker, "utf8").catch(() => "")) === want;
  if (await ready()) return python;
  await mkdir(root, {recursive: true});
  const lockFile = join(root, "install.lock");
  if (await lock(lockFile, ready, opts.logger)) {
    try {
      if (!(await ready())) await install(base, venv, marker, want, opts.logger);
    } finally {
      await unlink(lockFile).catch(() => undefined);
    }
  }
  return python;
}

async function install(base: PythonFound, venv: string, marker: string, want: string, logger: Logger): Promise<void> {
  await rm(venv, {recursive: true, force: true});
  logger.info("installing the image engine (once)", {package: INFERNA_PIN, python: `${base.path} (${base.version})`, venv});
  const made = await run(base.path, ["-m", "venv", venv], INSTALL_TIMEOUT_MS);
  if (!made.ok) {
    throw new PythonEnvError(`could not make a Python venv at ${venv} with ${base.path}: ${made.output.slice(-1500)}; ` +
      "install the venv module for that Python (Debian: python3.12-venv) or set SVC_PYTHON to another");
  }
  const reqFile = join(venv, "svc-requirements.txt");
  await writeFile(reqFile, requirements());
  const pip = await run(join(venv, "bin", "python"), ["-m", "pip", "install", "--quiet", "--disable-pip-version-check",
    "--require-hashes", "--no-deps", "--only-binary=:all:", "-r", reqFile], INSTALL_TIMEOUT_MS);
  if (!pip.ok) {
    throw new PythonEnvError(`could not install ${INFERNA_PIN} into ${venv}: ${pip.output.slice(-1500)}; ` +
      "the pinned wheel is built for x86_64 Linux; elsewhere install inferna yourself and set SVC_PYTHON to that Python");
  }
  // Written last: an interrupted install leaves no marker and is redone.
  await writeFile(marker, want);
  logger.info("image engine installed", {venv});
}

/** Whether a process of that id exists (one of another user's counts: the kill is refused, not missed). */
export const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Takes the lock file (O_EXCL), clearing one whose holder died; false when `ready` came true while waiting. */
async function lock(path: string, ready: () => Promise<boolean>, logger: Logger): Promise<boolean> {
  const deadline = Date.now() + INSTALL_TIMEOUT_MS;
  for (let said = false; Date.now() < deadline;) {
    try {
      const fd = await open(path, "wx");
      await fd.writeFile(String(process.pid));
      await fd.close();
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    if (await ready()) return false;
    const holder = Number(await readFile(path, "utf8").catch(() => "0"));
    const age = Date.now() - ((await stat(path).catch(() => null))?.mtimeMs ?? Date.now());
    // A pid that is gone left a stale lock; so did a holder that died between creating the file and writing its pid.
    if (holder > 0 ? !processAlive(holder) : age > 10_000) {
      await rm(path, {force: true});
      continue;
    }
    if (!said) logger.info("waiting for another process to finish installing the image engine", {pid: holder});
    said = true;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new PythonEnvError(`timed out waiting for the lock ${path}`);
}
