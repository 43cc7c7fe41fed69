// The Python tools that tests run (openapi-spec-validator for /openapi.json, schemathesis for the contract fuzzer),
// installed on first use into a virtual environment of their own, so a machine needs only python3 with pip: nothing
// is installed into the system's Python. The venv lives beside the models in the project's cache
// (~/.cache/svc/test-python/venv, or next to SVC_MODELS_DIR), is reused while its marker file records the same pins and
// the same python3, and is rebuilt when either changes. pip uses whatever index or proxy it is configured with, as the
// model fetcher does (src/models/pypi.ts).
//
// Two test processes may ask at once (the in-process tiers run two files at a time): the install runs under a lock
// file holding the installer's pid, and a waiting process takes the venv once the marker appears. A venv cannot be
// built elsewhere and renamed into place (pip writes its own path into each script's #! line), hence the lock.

import {spawnSync} from "node:child_process";
import {closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync} from "node:fs";
import {dirname, join} from "node:path";
import {defaultModelsDir} from "../src/models/resolve.ts";
import {processAlive} from "../src/side-models/images/python-env.ts";

/** Every Python package a test needs, pinned exactly. Change a version here and the venv is rebuilt on next use. */
export const PYTHON_PINS: readonly string[] = [
  "openapi-spec-validator==0.9.0",
  "schemathesis==4.32.5",
];

export interface PythonTools {
  /** The venv's interpreter. */
  python: string;
  /** The path of a console script the pinned packages installed (e.g. "schemathesis"). */
  bin(name: string): string;
  /** The pinned version of a package, for messages ("4.32.5" for "schemathesis"). */
  version(pkg: string): string;
}

const INSTALL_TIMEOUT_MS = 15 * 60_000;

export function pythonToolsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(dirname(defaultModelsDir(env)), "test-python");
}

function run(cmd: string, args: string[]): {ok: boolean; output: string} {
  const r = spawnSync(cmd, args, {encoding: "utf8", timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024});
  return {ok: r.status === 0, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`};
}

function must(cmd: string, args: string[], why: string): void {
  const r = run(cmd, args);
  if (!r.ok) throw new Error(`${why}: \`${cmd} ${args.join(" ")}\` failed:\n${r.output.slice(-3000)}`);
}

/** What the marker must say: the pins, and the interpreter the venv was made from (a venv breaks when it changes). */
function wanted(): string {
  const probe = run("python3", ["-c", "import sys; print(sys.version.split()[0], sys.base_prefix)"]);
  if (!probe.ok) throw new Error(`python3 is needed by the tests that run Python tools and did not start:\n${probe.output}`);
  return `${JSON.stringify({pins: PYTHON_PINS, python: probe.output.trim()}, null, 1)}\n`;
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Takes the lock file (O_EXCL), clearing one whose holder died; false after waiting out INSTALL_TIMEOUT_MS. */
function lock(path: string, ready: () => boolean): boolean {
  const deadline = Date.now() + INSTALL_TIMEOUT_MS;
  for (let said = false; Date.now() < deadline;) {
    try {
      const fd = openSync(path, "wx");
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    if (ready()) return false;
    let holder: number;
    let age: number;
    try {
      holder = Number(readFileSync(path, "utf8"));
      age = Date.now() - statSync(path).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    // A pid that is gone left a stale lock; so did a holder that died between creating the file and writing its pid.
    if (holder > 0 ? !processAlive(holder) : age > 10_000) {
      rmSync(path, {force: true});
      continue;
    }
    if (!said) process.stderr.write(`waiting for process ${holder} to finish installing the test Python tools\n`);
    said = true;
    sleep(500);
  }
  throw new Error(`timed out waiting for the lock ${path}`);
}

function install(venv: string, marker: string, want: string): void {
  rmSync(venv, {recursive: true, force: true});
  process.stderr.write(`installing ${PYTHON_PINS.join(", ")} into ${venv} (once)\n`);
  const python = join(venv, "bin", "python");
  // Debian's python3 lacks ensurepip unless python3-venv is installed: then the venv is made without pip, and the
  // system's pip installs into it (pip's --python).
  if (run("python3", ["-m", "venv", venv]).ok && existsSync(join(venv, "bin", "pip"))) {
    must(python, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...PYTHON_PINS], "installing the test Python tools");
  } else {
    rmSync(venv, {recursive: true, force: true});
    must("python3", ["-m", "venv", "--without-pip", venv], "creating a Python venv");
    must("python3", ["-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check", ...PYTHON_PINS],
      "installing the test Python tools with python3's pip");
  }
  // Written last: an interrupted install leaves no marker and is redone.
  writeFileSync(marker, want);
}

let cached: PythonTools | undefined;

/** The venv with PYTHON_PINS installed, made or remade first when its marker does not match. */
export function pythonTools(): PythonTools {
  if (cached) return cached;
  const root = pythonToolsDir();
  const venv = join(root, "venv");
  const marker = join(venv, "svc-pins.json");
  const want = wanted();
  const ready = () => existsSync(marker) && readFileSync(marker, "utf8") === want;
  if (!ready()) {
    mkdirSync(root, {recursive: true});
    const lockFile = join(root, "install.lock");
    if (lock(lockFile, ready)) {
      try {
        if (!ready()) install(venv, marker, want);
      } finally {
        unlinkSync(lockFile);
      }
    }
  }
  cached = {
    python: join(venv, "bin", "python"),
    bin: (name) => join(venv, "bin", name),
    version: (pkg) => {
      const pin = PYTHON_PINS.find((p) => p.split("==")[0] === pkg);
      if (!pin) throw new Error(`${pkg} is not among PYTHON_PINS`);
      return pin.split("==")[1]!;
    },
  };
  return cached;
}
