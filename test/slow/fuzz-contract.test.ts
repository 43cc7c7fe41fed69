// Fuzzing from the contract: schemathesis (PyPI) reads the real server's /openapi.json and sends, for every
// operation it lists, a bounded number of generated requests (examples, the coverage phase's edge values and
// schema-breaking bodies, then random fuzzing). The server must answer none with a 5xx, every reply must match
// its documented status, media type and shape (SSE events included), and GET /health must answer afterwards.
//
// Schemathesis comes pinned from the tests' own Python venv (support/python-tools.ts, made on first use under
// ~/.cache/svc/test-python with pip as src/models/pypi.ts fetches the default models: whatever index or proxy pip
// is configured with applies). Generation is kept short through the contract itself: SVC_MAX_TOKENS_CAP=8 is
// written into the document as the budget fields' maximum, and SVC_MAX_TOKENS_DEFAULT=8 bounds a body that sends none.

import assert from "node:assert/strict";
import {spawn} from "node:child_process";
import {mkdtempSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {pythonTools} from "../../support/python-tools.ts";
import {startServer, type RunningServer} from "../../support/server.ts";

const KEY = "sk-fuzz-0123456789";
/** Test cases per operation and phase: enough to reach every field's edge values, small enough for minutes. */
const MAX_EXAMPLES = Number(process.env.FUZZ_MAX_EXAMPLES ?? 3);
/** Every side model that runs on the cached default files, so their routes are registered and fuzzed too. */
const SIDE_MODELS = "decider-0.8b,nx3-embedding-0.6b,nx3-reranker-0.6b,nx3guard-gen-0.6b,nx3guard-stream-0.6b,nx3.5-2b,nx3-asr-0.6b";
const RUN_TIMEOUT_MS = 15 * 60_000;

interface FuzzRun {
  code: number | null;
  output: string;
  ms: number;
}

function fuzz(bin: string, url: string, extra: string[] = []): Promise<FuzzRun> {
  const reportDir = mkdtempSync(join(tmpdir(), "svc-fuzz-"));
  const args = ["run", `${url}/openapi.json`,
    "--header", `Authorization: Bearer ${KEY}`,
    "--max-examples", String(MAX_EXAMPLES),
    // Stateful: the links of /openapi.json chain a generation kept with X-Svc-Keep to DELETE /svc/handles/{name}.
    "--phases", "examples,coverage,fuzzing,stateful",
    "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
    "--workers", "1",
    "--seed", "20",
    "--request-timeout", "120",
    "--generation-database", "none",
    "--max-failures", "100",
    "--no-color",
    "--report-dir", reportDir,
    ...extra];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    // Run in the report directory: schemathesis and hypothesis leave their own state directories in the cwd.
    const child = spawn(bin, args, {cwd: reportDir, stdio: ["ignore", "pipe", "pipe"], env: {...process.env, SCHEMATHESIS_HOOKS: ""}});
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (output += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      rmSync(reportDir, {recursive: true, force: true});
      resolve({code, output, ms: Date.now() - started});
    });
  });
}

/** The failure headings of a run ("- ST108 SSE event violates schema" under "___ POST /v1/responses ___"). */
function failures(output: string): string[] {
  const out: string[] = [];
  let op = "";
  for (const line of output.split("\n")) {
    const head = /^_{3,}\s+(.+?)\s+_{3,}$/.exec(line);
    if (head) op = head[1]!;
    const fail = /^- (.+)$/.exec(line);
    if (fail && op) out.push(`${op}: ${fail[1]}`);
  }
  return [...new Set(out)];
}

let server: RunningServer;
let bin: string;
let schemathesisVersion: string;

before(async () => {
  const tools = pythonTools();
  bin = tools.bin("schemathesis");
  schemathesisVersion = tools.version("schemathesis");
  server = await startServer({SVC_API_KEY: KEY, SVC_CTX_SIZE: "1024", SVC_PARALLEL: "1", SVC_MAX_TOKENS_CAP: "8",
    SVC_MAX_TOKENS_DEFAULT: "8", SVC_FORK: "1", SVC_QUEUE_TIMEOUT: "600", SVC_NPU_MODELS: SIDE_MODELS}, 600_000);
});
after(async () => {
  await server?.stop();
});

describe("fuzzing from /openapi.json", () => {
  test("every operation: no 5xx, every reply in its documented status, media type and shape; /health answers after", {timeout: RUN_TIMEOUT_MS + 60_000}, async () => {
    const run = await fuzz(bin, server.url);
    const summary = run.output.split("\n").filter((l) => /generated|Tested:|failures?,|passed|in \d+\.\d+s/.test(l)).join("\n");
    console.log(`schemathesis ${schemathesisVersion}, ${MAX_EXAMPLES} examples per operation, ${(run.ms / 1000).toFixed(0)} s\n${summary}`);
    // Every operation of the document was reached (40 with the side routes loaded).
    const tested = /Tested:\s+(\d+)/.exec(run.output);
    const listed = Object.values(((await (await fetch(`${server.url}/openapi.json`, {headers: {authorization: `Bearer ${KEY}`}})).json()) as
      {paths: Record<string, object>}).paths).reduce((n, item) => n + Object.keys(item).length, 0);
    // Schemathesis 4.32.5's CLI counts one operation fewer than the document holds (its Python loader, given the same
    // document, lists them all; the one left out varied between runs, the root path GET / among them): allow that one.
    assert.ok(Number(tested?.[1]) >= listed - 1, `schemathesis tested ${tested?.[1]} of ${listed} operations\n${run.output.slice(-3000)}`);
    const found = failures(run.output);
    assert.deepEqual(found, [], `schemathesis found:\n${found.join("\n")}\n\n${run.output.slice(-6000)}`);
    assert.equal(run.code, 0, run.output.slice(-3000));
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as {status: string}).status, "ok");
    assert.ok(!server.logs.some((l) => / error request failed/.test(l)), server.logs.filter((l) => / error /.test(l)).slice(0, 5).join("\n"));
  });
});
