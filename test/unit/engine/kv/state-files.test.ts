// State files: a written state reads back only under the same identity, with its recorded size and hash;
// a failed write leaves nothing behind.

import assert from "node:assert/strict";
import {mkdtemp, readdir, readFile, rm, truncate, writeFile, appendFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {manifestPath, newStateId, readManifest, removeState, statePath, touchManifest, verifyState, writeState,
  type StateManifest} from "../../../../src/engine/kv/state-files.ts";

const identity = {model: "m.gguf", build: "b1"};
const meta = {tokens: [1, 2, 3, 4], cuts: [2, 4], label: "test"};
const dirs: string[] = [];
after(async () => { await Promise.all(dirs.map((d) => rm(d, {recursive: true, force: true}))); });

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-state-files-"));
  dirs.push(dir);
  return dir;
}

const writeBytes = (n: number) => async (path: string) => { await writeFile(path, Buffer.alloc(n, 7)); };

async function written(): Promise<{dir: string; id: string; manifest: StateManifest}> {
  const dir = await tempDir();
  const id = newStateId();
  return {dir, id, manifest: await writeState(dir, id, meta, identity, writeBytes(100))};
}

describe("state files", () => {
  test("round trip: the manifest reads back and the state verifies", async () => {
    const {dir, id, manifest} = await written();
    assert.equal(manifest.bytes, 100);
    assert.match(manifest.sha256, /^[0-9a-f]{64}$/);
    assert.deepEqual((await readdir(dir)).sort(), [`${id}.ggsq`, `${id}.json`]);
    assert.deepEqual(await readManifest(dir, id, {...identity}), manifest);
    assert.equal(await verifyState(dir, id, manifest), true);
  });

  test("another identity is rejected, including an extra or missing key", async () => {
    const {dir, id} = await written();
    const others: Record<string, string>[] = [{model: "m.gguf", build: "b2"}, {model: "m.gguf"}, {...identity, kv: "f16"}];
    for (const other of others) {
      const result = await readManifest(dir, id, other);
      assert.ok("rejected" in result && /another model/.test(result.rejected), JSON.stringify(other));
    }
  });

  test("a state whose size differs from the manifest is rejected", async () => {
    const {dir, id} = await written();
    await truncate(statePath(dir, id), 60);
    const short = await readManifest(dir, id, identity);
    assert.ok("rejected" in short && /60 bytes, manifest says 100/.test(short.rejected));
    await appendFile(statePath(dir, id), Buffer.alloc(50));
    const long = await readManifest(dir, id, identity);
    assert.ok("rejected" in long && /110 bytes/.test(long.rejected));
  });

  test("a malformed or missing manifest, or a missing state, is rejected", async () => {
    const {dir, id} = await written();
    await rm(statePath(dir, id));
    const missing = await readManifest(dir, id, identity);
    assert.ok("rejected" in missing && /missing/.test(missing.rejected));
    await writeFile(manifestPath(dir, id), JSON.stringify({format: 1, tokens: [1], cuts: [5]}));
    const malformed = await readManifest(dir, id, identity);
    assert.ok("rejected" in malformed && /malformed/.test(malformed.rejected));
    const none = await readManifest(dir, "no-such-id", identity);
    assert.ok("rejected" in none && /unreadable/.test(none.rejected));
  });

  test("a flipped byte passes the size check but not verifyState", async () => {
    const {dir, id, manifest} = await written();
    const bytes = await readFile(statePath(dir, id));
    bytes.writeUInt8(bytes.readUInt8(37) ^ 0xff, 37);
    await writeFile(statePath(dir, id), bytes);
    assert.ok(!("rejected" in (await readManifest(dir, id, identity))), "same size: the cheap check passes");
    assert.equal(await verifyState(dir, id, manifest), false);
    await rm(statePath(dir, id));
    assert.equal(await verifyState(dir, id, manifest), false, "a missing file is not verified either");
  });

  test("a failed write leaves no files and throws what the write threw", async () => {
    const dir = await tempDir();
    const failing = async (path: string) => {
      await writeFile(path, Buffer.alloc(10));
      throw Object.assign(new Error("no space left on device"), {code: "ENOSPC"});
    };
    await assert.rejects(writeState(dir, newStateId(), meta, identity, failing), {code: "ENOSPC"});
    assert.deepEqual(await readdir(dir), []);
  });

  test("touchManifest stores the new lastUsed; removeState removes the pair", async () => {
    const {dir, id, manifest} = await written();
    const before = manifest.lastUsed;
    await new Promise((r) => setTimeout(r, 5));
    await touchManifest(dir, id, manifest);
    assert.ok(manifest.lastUsed > before);
    const reread = await readManifest(dir, id, identity);
    assert.ok(!("rejected" in reread) && reread.lastUsed === manifest.lastUsed);
    await removeState(dir, id);
    assert.deepEqual(await readdir(dir), []);
  });
});
