// The exactness probe's verdict kept between starts (src/engine/llama/exactness-probe.ts, cachedProbe).

import assert from "node:assert/strict";
import {mkdtempSync, readdirSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {test} from "node:test";
import {cachedProbe, type ExactnessProbe} from "../../../../src/engine/llama/exactness-probe.ts";
import {MERGED_TILED_ROWS} from "../../../../src/engine/kv/row-classes.ts";

test("a verdict is probed once per key, read back after, and probed again when its file is damaged", async () => {
  const dir = join(mkdtempSync(join(tmpdir(), "svc-probe-cache-")), "probes");
  let runs = 0;
  const run = async (): Promise<ExactnessProbe> => {
    runs++;
    return {match: "rows", ms: 1234, reason: null};
  };
  try {
    const key = {model: "sha256:abc", engine: "node-llama-cpp 3.22.1 prebuilt", threads: {prompt: 2, decode: 2}};
    assert.deepEqual(await cachedProbe({dir, key}, MERGED_TILED_ROWS, run), {match: "rows", ms: 1234, reason: null, cached: false});
    assert.deepEqual(await cachedProbe({dir, key}, MERGED_TILED_ROWS, run), {match: "rows", ms: 1234, reason: null, cached: true});
    assert.equal(runs, 1);
    const other = {...key, threads: {prompt: 2, decode: 1}};
    assert.equal((await cachedProbe({dir, key: other}, MERGED_TILED_ROWS, run)).cached, false, "other threads: probed again");
    assert.equal(runs, 2);
    const files = readdirSync(dir);
    assert.equal(files.length, 2);
    assert.ok(files.every((f) => /^exactness-[0-9a-f]{32}\.json$/.test(f)), files.join(","));
    for (const f of files) writeFileSync(join(dir, f), "{\"match\": \"maybe\"}");
    assert.equal((await cachedProbe({dir, key}, MERGED_TILED_ROWS, run)).cached, false, "a file without a verdict is probed again");
    assert.equal(runs, 3);
    assert.equal((await cachedProbe({dir, key}, MERGED_TILED_ROWS, run)).cached, true, "and rewritten");
    assert.equal((await cachedProbe({dir, key}, MERGED_TILED_ROWS / 2, run)).cached, false, "another merge size (a smaller region): probed again");
    assert.equal(runs, 4);
  } finally {
    rmSync(join(dir, ".."), {recursive: true, force: true});
  }
});

test("no store, or a directory that cannot be written: probed every time, the verdict still returned", async () => {
  let runs = 0;
  const run = async (): Promise<ExactnessProbe> => {
    runs++;
    return {match: "pieces", ms: 5, reason: "a row's KV depended on how its piece was composed"};
  };
  assert.equal((await cachedProbe(null, MERGED_TILED_ROWS, run)).match, "pieces");
  const base = mkdtempSync(join(tmpdir(), "svc-probe-cache-"));
  try {
    const file = join(base, "not-a-dir");
    writeFileSync(file, "x");
    const r = await cachedProbe({dir: join(file, "probes"), key: 1}, MERGED_TILED_ROWS, run);
    assert.deepEqual(r, {match: "pieces", ms: 5, reason: "a row's KV depended on how its piece was composed", cached: false});
    assert.equal((await cachedProbe({dir: join(file, "probes"), key: 1}, MERGED_TILED_ROWS, run)).cached, false);
    assert.equal(runs, 3);
  } finally {
    rmSync(base, {recursive: true, force: true});
  }
});
