// The disk tier: what survives a restart, what matches a prompt, what the budget keeps, and that bad files
// (truncated, corrupt, foreign, malformed, leftovers) are removed rather than loaded. Real temp dirs; the
// engine's save and load are fakes that write and read plain bytes.

import assert from "node:assert/strict";
import {mkdir, mkdtemp, readdir, readFile, rm, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {DiskStore, type DiskEntry} from "../../../../src/engine/kv/disk-store.ts";
import {manifestPath, newStateId, statePath, writeState} from "../../../../src/engine/kv/state-files.ts";
import {createMemoryLogger} from "../../../../src/observability/log.ts";

const identity = {model: "m.gguf", build: "b1"};
const seq = (n: number, from = 0) => Array.from({length: n}, (_, i) => from + i);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const whole = (_e: DiskEntry, common: number) => common;

const dirs: string[] = [];
after(async () => { await Promise.all(dirs.map((d) => rm(d, {recursive: true, force: true}))); });

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-disk-store-"));
  dirs.push(dir);
  return dir;
}

async function open(dir: string, budgetBytes = 1_000_000, id: Record<string, string> = identity) {
  const logger = createMemoryLogger();
  return {store: await DiskStore.open({dir, budgetBytes, identity: id, logger}), logger};
}

/** A fake engine save: `n` bytes, each `fill`; counts its calls. */
function saver(n: number, fill = 1) {
  const fn = async (path: string) => {
    fn.calls++;
    await writeFile(path, Buffer.alloc(n, fill));
  };
  fn.calls = 0;
  return fn;
}

/** A fake engine load: records what it read. */
function reader() {
  const fn = async (path: string) => { fn.read.push(await readFile(path)); };
  fn.read = [] as Buffer[];
  return fn;
}

describe("DiskStore", () => {
  test("an entry put before a restart is found, matched and loaded after it", async () => {
    const dir = await tempDir();
    const first = (await open(dir)).store;
    const put = await first.put({tokens: seq(100), cuts: [64, 100]}, saver(1000, 42));
    assert.ok(put);
    assert.equal(first.writes, 1);

    const {store} = await open(dir);
    assert.equal(store.enabled, true);
    assert.equal(store.entries, 1);
    assert.equal(store.bytes, 1000);
    const [entry] = store.list();
    assert.deepEqual({id: entry!.id, tokens: entry!.tokens, cuts: entry!.cuts, bytes: entry!.bytes},
      {id: put.id, tokens: seq(100), cuts: [64, 100], bytes: 1000});
    const match = store.longestMatch([...seq(80), 999], whole);
    assert.equal(match?.entry.id, put.id);
    assert.equal(match?.length, 80);
    const read = reader();
    assert.equal(await store.load(match!.entry, read), true);
    assert.deepEqual(read.read, [Buffer.alloc(1000, 42)]);
    assert.equal(store.hits, 1);
    assert.equal(store.rejected, 0);
  });

  test("longestMatch takes the longest usable entry, as the usable callback decides", async () => {
    const {store} = await open(await tempDir());
    const short = await store.put({tokens: seq(50), cuts: [50]}, saver(10));
    const long = await store.put({tokens: seq(200), cuts: [180, 200]}, saver(10));
    const other = await store.put({tokens: seq(100, 5000), cuts: [100]}, saver(10));
    assert.ok(short && long && other);
    assert.equal(store.entries, 3, "the long one lacks the short one's cut at 50, so the short one stays");

    assert.deepEqual(store.longestMatch(seq(150), whole), {entry: long, length: 150});
    // Reusable only up to a cut: the long entry's first cut (180) is past the 150 common tokens.
    const toCut = (e: DiskEntry, common: number) => Math.max(0, ...e.cuts.filter((c) => c <= common));
    assert.deepEqual(store.longestMatch(seq(150), toCut), {entry: short, length: 50});
    assert.deepEqual(store.longestMatch(seq(190), toCut), {entry: long, length: 180});
    assert.equal(store.longestMatch(seq(150), () => 0), null);
    assert.equal(store.longestMatch(seq(10, 9000), whole), null, "nothing in common");
    const seen: number[] = [];
    store.longestMatch(seq(20), (e, common) => { seen.push(common); return 0; });
    assert.deepEqual(seen.sort(), [20, 20], "entries sharing nothing are not offered");
  });

  test("equal usable lengths: the most recently used entry wins", async () => {
    const {store} = await open(await tempDir());
    const a = await store.put({tokens: [...seq(40), 1], cuts: [40]}, saver(10));
    const b = await store.put({tokens: [...seq(40), 2], cuts: [40]}, saver(10));
    assert.ok(a && b);
    assert.equal(store.longestMatch(seq(40), whole)?.entry.id, b.id);
    assert.equal(await store.load(a, reader()), true);
    assert.equal(store.longestMatch(seq(40), whole)?.entry.id, a.id);
  });

  test("the budget evicts least recently used entries, at put and at open", async () => {
    const dir = await tempDir();
    const {store} = await open(dir, 3000);
    const e1 = await store.put({tokens: seq(10, 100), cuts: [10]}, saver(1000));
    await sleep(3);
    const e2 = await store.put({tokens: seq(10, 200), cuts: [10]}, saver(1000));
    await sleep(3);
    const e3 = await store.put({tokens: seq(10, 300), cuts: [10]}, saver(1000));
    await sleep(3);
    assert.ok(e1 && e2 && e3);
    assert.equal(await store.load(e1, reader()), true, "e1 is now the most recent");
    await sleep(3);
    const e4 = await store.put({tokens: seq(10, 400), cuts: [10]}, saver(1000));
    assert.ok(e4);
    assert.deepEqual(store.list().map((e) => e.id).sort(), [e1.id, e3.id, e4.id].sort(), "e2 was the least recently used");
    assert.equal(store.bytes, 3000);
    assert.equal(store.evicted, 1);
    assert.ok(!(await readdir(dir)).some((n) => n.startsWith(e2.id)), "its files are gone");

    const reopened = (await open(dir, 2000)).store;
    assert.deepEqual(reopened.list().map((e) => e.id).sort(), [e1.id, e4.id].sort(), "e3 was used least recently before the restart");
    assert.ok(reopened.bytes <= 2000);
    assert.equal((await readdir(dir)).length, 4, "two entries, two files each");
  });

  test("an entry larger than the whole budget is not kept", async () => {
    const dir = await tempDir();
    const {store} = await open(dir, 500);
    const write = saver(1000);
    assert.equal(await store.put({tokens: seq(10), cuts: [10]}, write), null);
    assert.equal(write.calls, 1);
    assert.equal(store.entries, 0);
    assert.equal(store.bytes, 0);
    assert.deepEqual(await readdir(dir), []);
  });

  test("a truncated state file is rejected and removed at open", async () => {
    const dir = await tempDir();
    const put = await (await open(dir)).store.put({tokens: seq(10), cuts: [10]}, saver(1000));
    await truncate(statePath(dir, put!.id), 300);
    const {store, logger} = await open(dir);
    assert.equal(store.entries, 0);
    assert.equal(store.rejected, 1);
    assert.deepEqual(await readdir(dir), []);
    assert.equal(logger.lines.filter((l) => l.includes(put!.id) && l.includes("truncated")).length, 1);
  });

  test("a flipped byte is caught before loading: read is never called and the entry is removed", async () => {
    const dir = await tempDir();
    const {store, logger} = await open(dir);
    const put = await store.put({tokens: seq(10), cuts: [10]}, saver(1000));
    const bytes = await readFile(statePath(dir, put!.id));
    bytes.writeUInt8(bytes.readUInt8(500) ^ 0xff, 500);
    await writeFile(statePath(dir, put!.id), bytes);
    const read = reader();
    assert.equal(await store.load(put!, read), false);
    assert.equal(read.read.length, 0);
    assert.equal(store.rejected, 1);
    assert.equal(store.hits, 0);
    assert.equal(store.entries, 0);
    assert.equal(store.longestMatch(seq(10), whole), null);
    assert.deepEqual(await readdir(dir), []);
    assert.ok(logger.lines.some((l) => l.includes("sha256")));
  });

  test("a load the engine fails is removed and counted, not thrown", async () => {
    const {store} = await open(await tempDir());
    const put = await store.put({tokens: seq(10), cuts: [10]}, saver(100));
    assert.equal(await store.load(put!, async () => { throw new Error("bad state"); }), false);
    assert.equal(store.rejected, 1);
    assert.equal(store.entries, 0);
    assert.equal(await store.load(put!, reader()), false, "a gone entry is a plain miss");
    assert.equal(store.rejected, 1);
  });

  test("a state written by another model or build is removed at open", async () => {
    const dir = await tempDir();
    await (await open(dir, 1_000_000, {model: "other.gguf", build: "b1"})).store.put({tokens: seq(10), cuts: [10]}, saver(100));
    const {store, logger} = await open(dir);
    assert.equal(store.entries, 0);
    assert.equal(store.rejected, 1);
    assert.deepEqual(await readdir(dir), []);
    assert.ok(logger.lines.some((l) => l.includes("another model")));
  });

  test("malformed manifests are removed with their state", async () => {
    const dir = await tempDir();
    const [bad, partial] = [newStateId(), newStateId()];
    await writeFile(manifestPath(dir, bad), "{not json");
    await writeFile(statePath(dir, bad), "x");
    await writeFile(manifestPath(dir, partial), JSON.stringify({format: 1, identity, tokens: [1, 2]}));
    const {store} = await open(dir);
    assert.equal(store.rejected, 2);
    assert.equal(store.entries, 0);
    assert.deepEqual(await readdir(dir), []);
  });

  test("orphan states and .tmp leftovers are removed; files that are not ours stay", async () => {
    const dir = await tempDir();
    const kept = await (await open(dir)).store.put({tokens: seq(10), cuts: [10]}, saver(100));
    const orphan = newStateId();
    await writeFile(statePath(dir, orphan), "x");
    await writeFile(statePath(dir, newStateId()) + ".tmp", "x");
    await writeFile(manifestPath(dir, newStateId()) + ".tmp", "{}");
    const foreign = ["notes.txt", "notes.json", "model.ggsq", "keep.tmp"];
    for (const name of foreign) await writeFile(join(dir, name), "mine");
    await mkdir(join(dir, "sub"));
    const {store} = await open(dir);
    assert.equal(store.entries, 1);
    assert.equal(store.rejected, 0);
    assert.deepEqual((await readdir(dir)).sort(), [...foreign, "sub", `${kept!.id}.ggsq`, `${kept!.id}.json`].sort());
  });

  test("a dir that cannot be created turns the tier off without throwing", async () => {
    const base = await tempDir();
    await writeFile(join(base, "file"), "x");
    const dir = join(base, "file", "cache");
    const {store, logger} = await open(dir);
    assert.equal(store.enabled, false);
    assert.match(store.disabledReason ?? "", /ENOTDIR/);
    const warns = logger.lines.filter((l) => l.includes(" warn "));
    assert.equal(warns.length, 1);
    assert.ok(warns[0]!.includes(dir) && warns[0]!.includes("not writable") && warns[0]!.includes("SVC_CACHE_DIR"));
    const write = saver(10);
    assert.equal(await store.put({tokens: seq(10), cuts: [10]}, write), null);
    assert.equal(write.calls, 0);
    assert.deepEqual(store.report(), {enabled: false, dir, bytes: 0, budget_bytes: 1_000_000, entries: 0, hits: 0, writes: 0,
      rejected: 0, cut_back: 0, disabled_reason: store.disabledReason});
  });

  test("a write that fails (disk full) turns the tier off; put returns null and leaves no files", async () => {
    const dir = await tempDir();
    const {store, logger} = await open(dir);
    const full = async (path: string) => {
      await writeFile(path, Buffer.alloc(50));
      throw Object.assign(new Error("no space left on device"), {code: "ENOSPC"});
    };
    assert.equal(await store.put({tokens: seq(10), cuts: [10]}, full), null);
    assert.equal(store.enabled, false);
    assert.match(store.disabledReason ?? "", /ENOSPC/);
    assert.equal(store.writes, 0);
    assert.deepEqual(await readdir(dir), []);
    const warns = logger.lines.filter((l) => l.includes(" warn "));
    assert.equal(warns.length, 1);
    assert.match(warns[0]!, /ENOSPC.*now off/);
    const write = saver(10);
    assert.equal(await store.put({tokens: seq(10, 50), cuts: [10]}, write), null);
    assert.equal(write.calls, 0, "off means no more writes");
  });

  test("a longer state of the same conversation supersedes shorter ones that it fully serves", async () => {
    const {store} = await open(await tempDir());
    const short = await store.put({tokens: seq(100), cuts: [50, 100]}, saver(100));
    const long = await store.put({tokens: seq(200), cuts: [50, 100, 200]}, saver(100));
    assert.ok(short && long);
    assert.deepEqual(store.list().map((e) => e.id), [long.id]);
    assert.equal(store.superseded, 1);
    assert.equal(store.bytes, 100);
    // Longer again but without the cuts at 50, 100, 200: the older one still serves prompts this one cannot.
    const longer = await store.put({tokens: seq(300), cuts: [300]}, saver(100));
    assert.ok(longer);
    assert.equal(store.entries, 2);
    assert.equal(store.superseded, 1);
  });

  test("a put already covered by an entry only touches its recency", async () => {
    const dir = await tempDir();
    const {store} = await open(dir);
    const long = await store.put({tokens: seq(200), cuts: [100, 200]}, saver(100));
    assert.ok(long);
    const before = long.lastUsed;
    await sleep(5);
    const write = saver(100);
    assert.equal(await store.put({tokens: seq(100), cuts: [100]}, write), null, "a prefix at one of its cuts");
    assert.equal(await store.put({tokens: seq(200), cuts: [200]}, write), null, "the same tokens");
    assert.equal(write.calls, 0);
    assert.equal(store.writes, 1);
    assert.equal(store.entries, 1);
    assert.ok(long.lastUsed > before);
    const manifest = JSON.parse(await readFile(manifestPath(dir, long.id), "utf8"));
    assert.equal(manifest.lastUsed, long.lastUsed, "the recency is on disk too");
    // A prefix at a point the entry has no cut for is not covered.
    assert.ok(await store.put({tokens: seq(150), cuts: [150]}, write));
    assert.equal(write.calls, 1);
  });

  test("a put that evicts the entry being loaded waits for the load to finish", async () => {
    const {store} = await open(await tempDir(), 1000);
    const a = await store.put({tokens: seq(10), cuts: [10]}, saver(1000, 7));
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const order: string[] = [];
    const loading = store.load(a!, async (path) => {
      await gate;
      order.push(`read ${(await readFile(path)).length}`);
    });
    const putting = store.put({tokens: seq(10, 50), cuts: [10]}, async (path) => {
      order.push("write");
      await writeFile(path, Buffer.alloc(1000));
    });
    await sleep(10);
    release();
    assert.equal(await loading, true);
    assert.ok(await putting);
    assert.deepEqual(order, ["read 1000", "write"]);
    assert.deepEqual(store.list().map((e) => e.tokens[0]), [50], "then a was evicted for the budget");
  });

  test("drop removes an entry and counts cut-backs in the report", async () => {
    const dir = await tempDir();
    const {store} = await open(dir);
    const a = await store.put({tokens: seq(10), cuts: [10]}, saver(100));
    const b = await store.put({tokens: seq(10, 50), cuts: [10]}, saver(100));
    await store.drop(a!, true);
    await store.drop(b!, false);
    await store.drop(a!, true);
    assert.equal(store.cutBack, 1, "a second drop of a gone entry counts nothing");
    assert.deepEqual(await readdir(dir), []);
    assert.deepEqual(store.report(), {enabled: true, dir, bytes: 0, budget_bytes: 1_000_000, entries: 0, hits: 0, writes: 2,
      rejected: 0, cut_back: 1, disabled_reason: null});
  });
});
