// Named sessions on remote replicas: the descriptor svc keeps under a handle's name (which replica holds the
// state, which slot file it was saved to) and the content-named slot files.

import assert from "node:assert/strict";
import {mkdtemp, rm, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {describeState, readDescriptor, slotFileName, writeDescriptor} from "../../../../src/engine/remote/remote-sessions.ts";

describe("remote session descriptors", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-remote-sessions-"));
  });
  after(async () => {
    await rm(dir, {recursive: true, force: true});
  });

  test("written and read back, with or without a slot file", async () => {
    const withFile = describeState("http://10.0.0.5:8080", slotFileName([1, 2, 3]), 3);
    await writeDescriptor(join(dir, "a"), withFile);
    assert.deepEqual(await readDescriptor(join(dir, "a")), withFile);
    const pinned = describeState("http://10.0.0.6:8080", null, 40);
    await writeDescriptor(join(dir, "b"), pinned);
    assert.deepEqual(await readDescriptor(join(dir, "b")), pinned);
  });

  test("anything else reads as no descriptor: a KV state file, another format, a slot file name that could leave the directory", async () => {
    const cases: [string, string][] = [
      ["ggsq", "GGSQ\u0000\u0001binary state"],
      ["other", JSON.stringify({format: "something", version: 1, replica: "http://a:1", slotFile: null, tokens: 1})],
      ["path", JSON.stringify({format: "svc-remote-slot", version: 1, replica: "http://a:1", slotFile: "../../etc/passwd", tokens: 1})],
      ["tokens", JSON.stringify({format: "svc-remote-slot", version: 1, replica: "http://a:1", slotFile: null, tokens: "9"})],
    ];
    for (const [name, body] of cases) {
      await writeFile(join(dir, name), body);
      assert.equal(await readDescriptor(join(dir, name)), null, name);
    }
    assert.equal(await readDescriptor(join(dir, "missing")), null);
  });

  test("slot files are named by their tokens: the same state gets the same name, another state another", () => {
    assert.match(slotFileName([1, 2, 3]), /^svc-[0-9a-f]{32}\.bin$/);
    assert.equal(slotFileName([1, 2, 3]), slotFileName([1, 2, 3]));
    assert.notEqual(slotFileName([1, 2, 3]), slotFileName([1, 2, 4]));
    assert.notEqual(slotFileName([1, 2, 3]), slotFileName([1, 2, 3, 0]));
  });
});
