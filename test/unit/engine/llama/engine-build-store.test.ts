// Builds from source kept outside node_modules (engine-build-store.ts): only complete builds move, in both
// directions, through a staging folder; and node-llama-cpp's own code still puts builds where we look.
import assert from "node:assert/strict";
import {mkdir, mkdtemp, readFile, readdir, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {dirname, join, sep} from "node:path";
import {after, before, test} from "node:test";
import {keepBuilds, restoreBuilds} from "../../../../src/engine/llama/engine-build-store.ts";
import {DONE_MARKER, LOCAL_BUILD_FILES, localBuildsDirectory} from "../../../../src/engine/llama/internals.ts";

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-build-store-"));
});
after(async () => {
  await rm(root, {recursive: true, force: true});
});

async function fakeBuild(dir: string, name: string, files: readonly string[]): Promise<void> {
  for (const f of files) {
    await mkdir(dirname(join(dir, name, f)), {recursive: true});
    await writeFile(join(dir, name, f), `${name}:${f}`);
  }
}

test("keepBuilds copies complete builds (addon, metadata, libraries, marker) and skips incomplete ones", async () => {
  const local = join(root, "k-local");
  const store = join(root, "k-store");
  await fakeBuild(local, "linux-x64-abc", [...LOCAL_BUILD_FILES, "Release/libggml-cpu.so", "CMakeFiles/obj.o"]);
  await fakeBuild(local, "linux-x64-half", ["Release/llama-addon.node"]); // a build cut short: no marker
  assert.deepEqual(await keepBuilds(store, local), ["linux-x64-abc"]);
  assert.deepEqual((await readdir(store)).sort(), ["linux-x64-abc"]);
  assert.equal(await readFile(join(store, "linux-x64-abc", "Release", "libggml-cpu.so"), "utf8"), "linux-x64-abc:Release/libggml-cpu.so");
  assert.equal(await readFile(join(store, "linux-x64-abc", DONE_MARKER), "utf8"), `linux-x64-abc:${DONE_MARKER}`);
  await assert.rejects(readFile(join(store, "linux-x64-abc", "CMakeFiles", "obj.o")), {code: "ENOENT"}, "intermediate objects are not kept");
  assert.deepEqual(await keepBuilds(store, local), [], "a build already stored is not copied again");
});

test("restoreBuilds brings stored builds back after the package folder was wiped, and leaves present ones alone", async () => {
  const local = join(root, "r-local");
  const store = join(root, "r-store");
  await fakeBuild(store, "linux-x64-abc", [...LOCAL_BUILD_FILES, "Release/libllama.so"]);
  await fakeBuild(store, "linux-x64-def.staging", LOCAL_BUILD_FILES); // an interrupted copy is never restored
  assert.deepEqual(await restoreBuilds(store, local), ["linux-x64-abc"]);
  for (const f of [...LOCAL_BUILD_FILES, "Release/libllama.so"]) {
    assert.equal(await readFile(join(local, "linux-x64-abc", f), "utf8"), `linux-x64-abc:${f}`);
  }
  assert.deepEqual((await readdir(local)).sort(), ["linux-x64-abc"]);
  assert.deepEqual(await restoreBuilds(store, local), []);
  assert.deepEqual(await restoreBuilds(join(root, "no-store"), local), [], "no store yet: nothing to do");
});

test("node-llama-cpp still builds into <package>/llama/localBuilds and checks exactly the files we copy", async () => {
  const dir = localBuildsDirectory();
  assert.ok(dir.endsWith(["node-llama-cpp", "llama", "localBuilds"].join(sep)), dir);
  const pkg = join(dir, "..", "..");
  const config = await readFile(join(pkg, "dist", "config.js"), "utf8");
  assert.match(config, /llamaDirectory = path\.join\(__dirname, "\.\.", "llama"\)/);
  assert.match(config, /llamaLocalBuildBinsDirectory = path\.join\(llamaDirectory, "localBuilds"\)/);
  const compile = await readFile(join(pkg, "dist", "bindings", "utils", "compileLLamaCpp.js"), "utf8");
  const check = compile.slice(compile.indexOf("export async function getLocalBuildBinaryPath"), compile.indexOf("export async function getLocalBuildBinaryBuildMetadata"));
  assert.match(check, /buildConfigType, "llama-addon\.node"/);
  assert.match(check, /buildConfigType, buildMetadataFileName/);
  assert.match(check, /"buildDone\.status"/);
  assert.match(compile, /const buildConfigType = "Release";/);
  assert.match(config, /buildMetadataFileName = "_nlcBuildMetadata\.json"/);
});
