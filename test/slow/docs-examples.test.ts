// Every code example in README.md and docs/*.md runs against a real server (test/slow/doc-examples.ts reads them).
//
// The rule. A fenced block is an example when it is
//   - a shell block (```sh, bash, shell) that names the server's address (`127.0.0.1:8731` or `localhost:8731`)
//     outside a `#` comment, or
//   - any JavaScript or TypeScript block (```js, ts): every one in the docs calls the server through an SDK.
// Other blocks (settings, `npm start` alone, config files, outputs, logs) are not examples.
// How an example runs:
//   - on a server of the project's test model (support/server.ts), started with the settings the block asks for: its
//     own `SVC_X=... npm start` line (not run itself) and the `SVC_X=value` directives of a marker comment on the line
//     right before the fence, `<!-- example: SVC_NPU_MODELS=nx3.5-2b -->`; blocks that ask for the same settings
//     share one server, in page order (so a later block may use what an earlier one kept, as a reader would);
//   - with the docs' address rewritten to the test server's, in a working directory of its own;
//   - shell: by bash with `set -euo pipefail`; every `curl` gets `-sS --fail-with-body` and reports its status;
//     passes when bash exits 0, every curl answered 2xx, the output is not empty and holds no error object;
//   - JS/TS: as an ES module through tsx; a block that uses `client` without making it gets the README tour's two
//     lines first (the openai import and the client); passes when it exits 0 (the SDKs throw on an error status);
//   - either way, the server must log no error while the block runs.
// Every example server also gets SVC_MAX_TOKENS_DEFAULT=64: the test model never ends a reply by itself, so a request
// the docs send without a budget (a trained model stops when it is done) would otherwise run to the end of its region.
// DOCS_EXAMPLES_SHOW=1 prints each example's output.
// Other marker directives: `audio: NAME.wav` writes spoken test audio (espeak-ng) under that name in the working
// directory; `classifier: NAME` builds a small sentiment classifier (test/fixtures/classifier/build.ts) in a folder
// of that name and serves it as an own fine-tune (SVC_NPU_MODELS); `picture: NAME.png` writes a small PNG under that
// name; `painter` serves nximg2-klein-4b on the generated test image model; `vision` serves the test model with the
// test projector (SVC_MMPROJ), so pictures are read; `embedder` serves embeddingnx-2 on the generated test embedding
// model and its projector for pictures and sound. `skip: <reason>` marks a block that cannot run
// here: it is reported as skipped with its reason and counted in the summary, never dropped silently. A shell block
// that needs curl or jq on a machine without it is skipped the same way, naming the missing tool.

import assert from "node:assert/strict";
import {spawn, spawnSync} from "node:child_process";
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {ROOT, startServer, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";
import {encodeWav, speak} from "../../support/speech-audio.ts";
import {testEmbeddingModelPath, testModelPath} from "../../support/test-model.ts";
import {testPng, testProjectorPath} from "../../support/test-projector.ts";
import {testImageModelDir} from "../../support/test-image-model.ts";
import {buildSentimentClassifier} from "../fixtures/classifier/build.ts";
import {docExamples, scriptModule, setupKey, shellScript, STATUS_LINE, toolsOf, type Example} from "./doc-examples.ts";

const examples = docExamples(ROOT);
/** Inside the repository, so that an example's `import "openai"` finds node_modules. */
const work = mkdtempSync(join(ROOT, ".docs-examples-"));
after(() => rmSync(work, {recursive: true, force: true}));

const missing = new Set(["curl", "jq"].filter((tool) => spawnSync(tool, ["--version"]).error !== undefined));
const skipReason = (ex: Example): string | null => {
  if (ex.skip) return `marked: ${ex.skip}`;
  const absent = toolsOf(ex).filter((t) => missing.has(t));
  return absent.length > 0 ? `${absent.join(" and ")} not installed on this machine` : null;
};

/** The examples by server setup, in order of first appearance. */
const groups = new Map<string, Example[]>();
for (const ex of examples) {
  if (skipReason(ex)) continue;
  const key = setupKey(ex);
  groups.set(key, [...(groups.get(key) ?? []), ex]);
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<{code: number | null; stdout: string; stderr: string}> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {cwd, stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs});
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({code, stdout, stderr}));
  });
}

const ERROR_OBJECT = /"error"\s*:\s*\{/;
/** A budget for requests that set none (see the header). */
const BUDGET = {SVC_MAX_TOKENS_DEFAULT: "64"};
const DEFAULT_SETUP = setupKey({settings: {}, classifiers: []});
/** What a `picture:` directive writes: a small colour ramp, read by the test projector. */
const PICTURE = testPng(64, 48, (x, y) => [x * 4, y * 5, 128]);
const TIMEOUT_MS = 300_000;

async function runExample(ex: Example, server: RunningServer, note: (line: string) => void): Promise<void> {
  const dir = join(work, ex.id.replace(/[^A-Za-z0-9]+/g, "-"));
  mkdirSync(dir, {recursive: true});
  for (const name of ex.pictures) writeFileSync(join(dir, name), PICTURE);
  for (const name of ex.audio) {
    const audio = await speak("The quick brown fox jumps over the lazy dog.", {voice: "en-us", wpm: 150, wordPauses: true});
    writeFileSync(join(dir, name), encodeWav(audio, {bits: 16}));
  }
  const logsBefore = server.logs.length;
  const show = (r: {code: number | null; stdout: string; stderr: string}) =>
    `exit ${r.code}\n--- stdout\n${r.stdout.slice(0, 2000)}\n--- stderr\n${r.stderr.slice(0, 2000)}`;
  if (ex.lang === "sh") {
    writeFileSync(join(dir, "example.sh"), shellScript(ex, server.url));
    const r = await run("bash", ["example.sh"], dir, TIMEOUT_MS);
    if (process.env.DOCS_EXAMPLES_SHOW) note(show(r));
    assert.equal(r.code, 0, `${ex.id}: bash failed\n${show(r)}`);
    const statuses = [...r.stderr.matchAll(STATUS_LINE)].map((m) => Number(m[1]));
    assert.ok(statuses.length > 0, `${ex.id}: no curl reported a status\n${show(r)}`);
    assert.ok(statuses.every((s) => s >= 200 && s < 300), `${ex.id}: statuses ${statuses.join(", ")}\n${show(r)}`);
    assert.ok(r.stdout.trim().length > 0, `${ex.id}: no output\n${show(r)}`);
    assert.doesNotMatch(r.stdout, ERROR_OBJECT, `${ex.id}: an error body\n${show(r)}`);
  } else {
    writeFileSync(join(dir, "example.mts"), scriptModule(ex, server.url));
    const r = await run(process.execPath, ["--import", "tsx", "example.mts"], dir, TIMEOUT_MS);
    if (process.env.DOCS_EXAMPLES_SHOW) note(show(r));
    assert.equal(r.code, 0, `${ex.id}: the script failed\n${show(r)}`);
  }
  const errors = server.logs.slice(logsBefore).filter((l) => / svc error /.test(l));
  assert.deepEqual(errors, [], `${ex.id}: the server logged errors`);
}

/** Starts the server a group asks for: the shared default one, or one of its own. */
async function serverFor(ex: Example): Promise<RunningServer> {
  const settings: Record<string, string> = {...BUDGET, ...ex.settings};
  if (ex.classifiers.length > 0) {
    const dirs: string[] = [];
    for (const name of ex.classifiers) {
      await buildSentimentClassifier(join(work, name));
      dirs.push(join(work, name));
    }
    settings.SVC_NPU_MODELS = [settings.SVC_NPU_MODELS, ...dirs].filter(Boolean).join(",");
  }
  if (ex.needs.includes("vision")) settings.SVC_MMPROJ = await testProjectorPath(await testModelPath());
  if (ex.needs.includes("embedder")) {
    const model = await testEmbeddingModelPath();
    const embedder = `embeddingnx-2=${model}+${await testProjectorPath(model, {audio: true})}`;
    settings.SVC_NPU_MODELS = [settings.SVC_NPU_MODELS, embedder].filter(Boolean).join(",");
  }
  if (ex.needs.includes("painter")) {
    settings.SVC_NPU_MODELS = [settings.SVC_NPU_MODELS, `nximg2-klein-4b=${await testImageModelDir()}`].filter(Boolean).join(",");
  }
  return setupKey(ex) === DEFAULT_SETUP ? sharedServer(settings) : startServer(settings, 600_000);
}

for (const [key, group] of groups) {
  describe(`examples on a server with ${key === DEFAULT_SETUP ? "default settings" : key}`, () => {
    let server: RunningServer | undefined;
    let failedStart: Error | undefined;
    after(async () => server?.stop());
    for (const ex of group) {
      test(`${ex.id} (${ex.lang})`, async (t) => {
        if (failedStart) throw failedStart;
        if (!server) server = await serverFor(ex).catch((err: Error) => { throw (failedStart = err); });
        await runExample(ex, server, (line) => t.diagnostic(line));
      });
    }
  });
}

/**
 * The blocks the docs mark as not run, with their reason: Claude Code's interactive terminal UI, which the slow
 * tier's coding-agents test runs headless against the server; the image edits, which the image tests run.
 */
const MARKED_NOT_RUN = [
  "docs/cache-and-sessions.md: opens Claude Code's interactive terminal UI; test/slow/coding-agents.test.ts runs Claude Code headless with these settings",
  "docs/side-models.md: an edit encodes its picture with the full-width autoencoder, about 40 s on one core with the test weights; " +
    "test/slow/images.test.ts runs images.edit and images.createVariation",
];

test("the docs have examples, each run or marked with a reason", (t) => {
  const skipped = examples.filter((ex) => skipReason(ex));
  const byPage = new Map<string, number>();
  for (const ex of examples) byPage.set(ex.page, (byPage.get(ex.page) ?? 0) + 1);
  t.diagnostic(`${examples.length} examples: ${examples.length - skipped.length} run on ${groups.size} servers, ${skipped.length} not run`);
  for (const ex of skipped) t.diagnostic(`not run: ${ex.id}: ${skipReason(ex)}`);
  t.diagnostic(`by page: ${[...byPage].map(([p, n]) => `${p} ${n}`).join(", ")}`);
  assert.ok(examples.length >= 20, `the docs have examples (found ${examples.length})`);
  // Only a missing curl or jq may leave more than the marked blocks unrun; a marked block is not a test that
  // skips, it is a block this test knows it does not run, and a new one must be added here with its reason.
  if (missing.size === 0) assert.deepEqual(skipped.filter((ex) => !ex.skip).map((ex) => ex.id), []);
  assert.deepEqual(skipped.filter((ex) => ex.skip).map((ex) => `${ex.page}: ${ex.skip}`), MARKED_NOT_RUN);
  for (const page of ["README.md", "docs/api.md", "docs/side-models.md"]) assert.ok(byPage.has(page), `${page} has examples`);
});
