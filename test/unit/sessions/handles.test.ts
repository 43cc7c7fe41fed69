// Session handles (SVC_FORK=1): every row of the spec's state table at registry level, the handle limit, joins,
// restarts on a persistent dir, the temp-dir fallback, and the /svc/handles routes.

import assert from "node:assert/strict";
import {existsSync} from "node:fs";
import {mkdtemp, readdir, readFile, rm, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {registerHandleRoutes} from "../../../src/api/ops/handle-routes.ts";
import {buildServer} from "../../../src/api/server.ts";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {HandleRegistry} from "../../../src/sessions/handles.ts";

const identity = {model: "test-model", engine: "test-engine"};
const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, {recursive: true, force: true}))));

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-handles-test-"));
  roots.push(dir);
  return dir;
}

/** The engine's save, faked: `n` bytes of `fill`. */
function bytes(n: number, fill = 7) {
  return async (path: string) => writeFile(path, Buffer.alloc(n, fill));
}

async function open(dir: string | null, opts: {max?: number; ttlS?: number; clock?: {t: number}} = {}) {
  const clock = opts.clock ?? {t: 1_700_000_000_000};
  const logger = createMemoryLogger();
  const reg = await HandleRegistry.open({dir, maxHandles: opts.max ?? 8, ttlS: opts.ttlS ?? 600, identity, logger, now: () => clock.t});
  return {reg, logger, clock};
}

/** One request that keeps its end state under `name`. */
async function keepOnce(reg: HandleRegistry, name: string, tokens: number[], size = 16): Promise<boolean> {
  const ticket = reg.begin({keep: name});
  assert.equal(ticket.keep, "ok");
  const kept = await reg.keep(name, {tokens, cuts: [tokens.length]}, bytes(size));
  ticket.release();
  return kept;
}

async function stateFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(".ggsq")).sort();
}

describe("HandleRegistry: the state table", () => {
  test("none → live on X-Svc-Keep; lookup gives the kept tokens and a state path; unknown names give null", async () => {
    const {reg} = await open(await scratch());
    assert.equal(await keepOnce(reg, "a", [1, 2, 3]), true);
    const found = reg.lookup("a")!;
    assert.deepEqual([found.name, found.tokens, found.cuts, existsSync(found.path), await found.verify()],
      ["a", [1, 2, 3], [3], true, true]);
    assert.equal(reg.lookup("b"), null);
    assert.deepEqual(reg.list().map((h) => [h.name, h.tokens, h.bytes, h.in_use]), [["a", 3, 16, false]]);
    await reg.close();
  });

  test("live → live on X-Svc-Keep again: the state is replaced and the old files removed", async () => {
    const dir = await scratch();
    const {reg} = await open(dir);
    await keepOnce(reg, "a", [1, 2]);
    const first = reg.lookup("a")!.path;
    await keepOnce(reg, "a", [1, 2, 3, 4], 32);
    await reg.settled();
    assert.deepEqual(reg.lookup("a")!.tokens, [1, 2, 3, 4]);
    assert.deepEqual([existsSync(first), (await stateFiles(dir)).length, reg.list()[0]!.bytes], [false, 1, 32]);
    await reg.close();
  });

  test("a replaced state stays on disk while another request may be loading it", async () => {
    const {reg} = await open(await scratch());
    await keepOnce(reg, "a", [1]);
    const [reader, old, writer] = [reg.begin({from: "a"}), reg.lookup("a")!.path, reg.begin({keep: "a"})];
    assert.equal(await reg.keep("a", {tokens: [1, 2], cuts: [2]}, bytes(8)), true);
    writer.release();
    await reg.settled();
    assert.ok(existsSync(old), "the reader still uses the name");
    reader.release();
    await reg.settled();
    assert.equal(existsSync(old), false);
    await reg.close();
  });

  test("a failed write keeps the old state (and a new name stays unkept)", async () => {
    const {reg, logger} = await open(await scratch());
    await keepOnce(reg, "a", [1]);
    const fail = () => Promise.reject(new Error("ENOSPC: no space left on device"));
    for (const name of ["a", "b"]) {
      const ticket = reg.begin({keep: name, from: name});
      assert.equal(await reg.keep(name, {tokens: [1, 2], cuts: [2]}, fail), false);
      ticket.release();
    }
    assert.deepEqual([reg.lookup("a")!.tokens, reg.lookup("b")], [[1], null]);
    assert.ok(logger.lines.some((l) => l.includes("writing its state failed") && l.includes("ENOSPC")));
    await reg.close();
  });

  test("live → released after SVC_FORK_TTL_S unused; a lookup or a request in use keeps it alive", async () => {
    const dir = await scratch();
    const {reg, clock} = await open(dir, {ttlS: 600});
    await keepOnce(reg, "a", [1]);
    clock.t += 599_000;
    assert.ok(reg.lookup("a"), "just before the TTL; the lookup counts as use");
    assert.equal(reg.list()[0]!.expires_in_s, 600);
    clock.t += 599_000;
    const ticket = reg.begin({from: "a"});
    clock.t += 3_600_000;
    reg.sweep();
    assert.deepEqual(reg.list().map((h) => [h.name, h.in_use]), [["a", true]], "in use: the sweep waits");
    ticket.release();
    assert.equal(reg.list().length, 1, "the end of the request counts as use");
    clock.t += 600_000;
    assert.deepEqual(reg.list(), []);
    assert.equal(reg.lookup("a"), null);
    await reg.settled();
    assert.deepEqual(await stateFiles(dir), []);
    await reg.close();
  });

  test("DELETE: live → released; unknown → unchanged; in use → pending, gone at once, files removed at release", async () => {
    const dir = await scratch();
    const {reg} = await open(dir);
    await keepOnce(reg, "a", [1]);
    assert.deepEqual([reg.delete("a"), reg.delete("a"), reg.delete("never")], ["released", "unknown", "unknown"]);
    await reg.settled();
    assert.deepEqual(await stateFiles(dir), []);
    await keepOnce(reg, "b", [1]);
    const ticket = reg.begin({from: "b"});
    const path = reg.lookup("b")!.path;
    assert.equal(reg.delete("b"), "pending");
    assert.deepEqual([reg.lookup("b"), reg.list()], [null, []]);
    await reg.settled();
    assert.ok(existsSync(path), "the request may still be loading it");
    ticket.release();
    ticket.release(); // idempotent
    await reg.settled();
    assert.equal(existsSync(path), false);
    await reg.close();
  });

  test("a handle deleted while its keep is running is not brought back", async () => {
    const dir = await scratch();
    const {reg} = await open(dir);
    await keepOnce(reg, "a", [1]);
    const ticket = reg.begin({keep: "a"});
    assert.equal(reg.delete("a"), "pending");
    assert.equal(await reg.keep("a", {tokens: [1, 2], cuts: [2]}, bytes(8)), false);
    ticket.release();
    await reg.settled();
    assert.equal(reg.lookup("a"), null);
    assert.deepEqual(await stateFiles(dir), []);
    await reg.close();
  });

  test("join: X-Svc-From one name and X-Svc-Keep another", async () => {
    const {reg} = await open(await scratch());
    await keepOnce(reg, "base", [1, 2]);
    const ticket = reg.begin({keep: "branch", from: "base"});
    assert.deepEqual([ticket.keep, reg.lookup("base")!.tokens], ["ok", [1, 2]]);
    assert.equal(await reg.keep("branch", {tokens: [1, 2, 3], cuts: [2, 3]}, bytes(8)), true);
    assert.deepEqual(reg.list().map((h) => [h.name, h.in_use]), [["base", true], ["branch", true]]);
    ticket.release();
    assert.deepEqual(reg.list().map((h) => [h.name, h.tokens, h.in_use]), [["base", 2, false], ["branch", 3, false]]);
    await reg.close();
  });
});

describe("HandleRegistry: the limit", () => {
  test("the ninth new name is full; an existing name is still ok; reservations count until released", async () => {
    const {reg} = await open(null, {max: 8});
    for (let i = 0; i < 7; i++) await keepOnce(reg, `n${i}`, [i]);
    const x = reg.begin({keep: "x"});
    assert.equal(x.keep, "ok", "the eighth");
    assert.equal(reg.begin({keep: "y"}).keep, "full", "7 live + 1 reserved");
    const x2 = reg.begin({keep: "x"});
    assert.equal(x2.keep, "ok", "the same reserved name again");
    assert.equal(reg.begin({keep: "n0"}).keep, "ok", "an existing name");
    assert.equal(reg.list().length, 7, "a reserved name is not listed until kept");
    x.release();
    x2.release();
    const y2 = reg.begin({keep: "y"});
    assert.equal(y2.keep, "ok", "x was never kept: its reservation is gone");
    assert.equal(await reg.keep("y", {tokens: [1], cuts: [1]}, bytes(4)), true);
    y2.release();
    assert.equal(reg.begin({keep: "z"}).keep, "full", "8 live");
    assert.equal(reg.begin({}).keep, null);
    await reg.close();
  });
});

describe("HandleRegistry: restarts and directories", () => {
  test("reopening the same dir restores live handles with their lastUsed", async () => {
    const dir = await scratch();
    const clock = {t: 1_700_000_000_000};
    const first = await open(dir, {clock});
    await keepOnce(first.reg, "a", [1, 2]);
    clock.t += 5_000;
    await keepOnce(first.reg, "b", [3]);
    const before = first.reg.list();
    await first.reg.close();
    assert.deepEqual(Object.keys(JSON.parse(await readFile(join(dir, "handles.json"), "utf8")).handles).sort(), ["a", "b"]);
    const second = await open(dir, {clock});
    assert.deepEqual(second.reg.list(), before);
    assert.deepEqual([second.reg.lookup("a")!.tokens, second.reg.persistent], [[1, 2], true]);
    await second.reg.close();
  });

  test("a truncated state is dropped at reopen, its files removed, and unreferenced files too", async () => {
    const dir = await scratch();
    const clock = {t: 1_700_000_000_000};
    const first = await open(dir, {clock});
    await keepOnce(first.reg, "a", [1]);
    await keepOnce(first.reg, "b", [2]);
    await truncate(first.reg.lookup("a")!.path, 3);
    await first.reg.close();
    await writeFile(join(dir, "0abc-0123456789ab.ggsq"), "stray");
    const second = await open(dir, {clock});
    assert.deepEqual(second.reg.list().map((h) => h.name), ["b"]);
    assert.ok(second.logger.lines.some((l) => l.includes("dropped at restore") && l.includes("truncated")));
    assert.deepEqual(await stateFiles(dir), [second.reg.lookup("b")!.path.slice(dir.length + 1)]);
    await second.reg.close();
  });

  test("an expired handle is dropped at reopen", async () => {
    const dir = await scratch();
    const clock = {t: 1_700_000_000_000};
    const first = await open(dir, {clock, ttlS: 60});
    await keepOnce(first.reg, "a", [1]);
    await first.reg.close();
    clock.t += 61_000;
    const second = await open(dir, {clock, ttlS: 60});
    assert.deepEqual(second.reg.list(), []);
    assert.deepEqual(await stateFiles(dir), []);
    await second.reg.close();
  });

  test("a dir that cannot be created falls back to a temp dir, with a warning", async () => {
    const root = await scratch();
    await writeFile(join(root, "file"), "not a dir");
    const {reg, logger} = await open(join(root, "file", "handles"));
    assert.equal(reg.persistent, false);
    assert.ok(logger.lines.some((l) => l.includes(" warn ") && l.includes("ENOTDIR") && l.includes("SVC_CACHE_DIR")));
    assert.equal(await keepOnce(reg, "a", [1]), true);
    assert.ok(existsSync(reg.dir));
    await reg.close();
    assert.equal(existsSync(reg.dir), false, "the temp dir is removed on close");
  });

  test("no dir: a temp dir that does not outlive the registry", async () => {
    const {reg} = await open(null);
    assert.equal(await keepOnce(reg, "a", [1]), true);
    assert.equal(existsSync(join(reg.dir, "handles.json")), false, "no index without a persistent dir");
    await reg.close();
    assert.equal(existsSync(reg.dir), false);
  });
});

describe("/svc/handles routes", () => {
  test("GET lists; DELETE releases, 404s an unknown name, 400s a malformed one", async () => {
    const {reg, logger} = await open(null);
    await keepOnce(reg, "b", [1, 2]);
    await keepOnce(reg, "a", [1]);
    const app = buildServer({bodyLimitBytes: 1e6, logger});
    registerHandleRoutes(app, reg);
    const list = await app.inject({method: "GET", url: "/svc/handles"});
    const body = list.json();
    assert.deepEqual([list.statusCode, body.object, body.enabled, body.max], [200, "list", true, 8]);
    assert.deepEqual(body.data.map((h: {name: string; tokens: number}) => [h.name, h.tokens]), [["a", 1], ["b", 2]]);
    assert.equal(typeof body.data[0].last_used, "string");
    const ticket = reg.begin({from: "b"});
    const pending = await app.inject({method: "DELETE", url: "/svc/handles/b"});
    assert.deepEqual([pending.statusCode, pending.json()], [200, {name: "b", released: true, pending: true}]);
    ticket.release();
    const del = await app.inject({method: "DELETE", url: "/svc/handles/a"});
    assert.deepEqual([del.statusCode, del.json()], [200, {name: "a", released: true, pending: false}]);
    const again = await app.inject({method: "DELETE", url: "/svc/handles/a"});
    assert.equal(again.statusCode, 404);
    assert.deepEqual(again.json().error, {message: 'no live session handle named "a"', type: "not_found_error", param: null, code: null});
    const bad = await app.inject({method: "DELETE", url: "/svc/handles/a%20b"});
    assert.deepEqual([bad.statusCode, bad.json().error.param], [400, "name"]);
    assert.deepEqual((await app.inject({method: "GET", url: "/svc/handles"})).json().data, []);
    await app.close();
    await reg.close();
  });

  test("with sessions off: GET says enabled false, DELETE is 404 saying how to turn them on", async () => {
    const app = buildServer({bodyLimitBytes: 1e6, logger: createMemoryLogger()});
    registerHandleRoutes(app, null);
    const list = await app.inject({method: "GET", url: "/svc/handles"});
    assert.deepEqual(list.json(), {object: "list", enabled: false, max: null, data: []});
    const del = await app.inject({method: "DELETE", url: "/svc/handles/a"});
    assert.deepEqual([del.statusCode, /SVC_FORK=1/.test(del.json().error.message)], [404, true]);
    await app.close();
  });
});
