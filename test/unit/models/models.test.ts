// Model sources without pip: local paths, the cache directory, hf: against a local HTTP server, the
// progress reporter. pip-backed sources live in models-pypi.test.ts.

import assert from "node:assert/strict";
import {createServer, type IncomingMessage, type Server, type ServerResponse} from "node:http";
import type {AddressInfo} from "node:net";
import {mkdir, readFile, stat, utimes, writeFile} from "node:fs/promises";
import {join, relative} from "node:path";
import {after, before, describe, test} from "node:test";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {startProgress} from "../../../src/models/progress.ts";
import {ModelSourceError, resolveModel, type ResolveOptions} from "../../../src/models/resolve.ts";
import {deadPid, ggufBytes, makeTmp, partFiles, sha256} from "../../fixtures/models/helpers.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let endpoint = "";
const routes = new Map<string, Handler>();
const requests: {url: string; auth: string | undefined}[] = [];
let tmp: {dir: string; cleanup: () => Promise<void>};

before(async () => {
  tmp = await makeTmp("unit");
  server = createServer((req, res) => {
    requests.push({url: req.url ?? "", auth: req.headers.authorization});
    const h = routes.get(req.url ?? "");
    if (h) return h(req, res);
    res.writeHead(404, {"content-type": "text/plain"}).end("Entry not found");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await tmp.cleanup();
});

let dirCount = 0;
async function opts(extra: Partial<ResolveOptions> = {}) {
  const modelsDir = join(tmp.dir, `models-${++dirCount}`);
  const logger = createMemoryLogger();
  const o: ResolveOptions = {modelsDir, logger, progress: "lines", env: {HF_ENDPOINT: endpoint, HF_TOKEN: ""}, ...extra};
  return {o, modelsDir, logger};
}

function serve(path: string, body: Buffer, headers: Record<string, string> = {}) {
  routes.set(path, (_req, res) => {
    res.writeHead(200, {"content-type": "application/octet-stream", "content-length": String(body.length), ...headers});
    res.end(body);
  });
}

const exists = async (p: string) => (await stat(p).catch(() => null)) !== null;

describe("local sources", () => {
  test("absolute, cwd-relative and ~/ paths resolve to the file itself, unhashed", async () => {
    const {o} = await opts();
    const file = join(tmp.dir, "local.gguf");
    await writeFile(file, ggufBytes(64));
    for (const spec of [file, relative(process.cwd(), file)]) {
      const r = await resolveModel(spec, o);
      assert.deepEqual(r, {path: file, sha256: null, source: spec, kind: "path"});
    }
    const savedHome = process.env.HOME;
    process.env.HOME = tmp.dir; // os.homedir() reads HOME on POSIX
    try {
      const r = await resolveModel("~/local.gguf", o);
      assert.equal(r.path, file);
      assert.equal(r.kind, "path");
    } finally {
      process.env.HOME = savedHome;
    }
  });

  test("a local file that is not GGUF is refused", async () => {
    const {o} = await opts();
    const file = join(tmp.dir, "notes.gguf");
    await writeFile(file, "hello, not a model");
    await assert.rejects(resolveModel(file, o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.match(e.message, /not a GGUF file/);
      assert.match(e.message, /SVC_MODEL/);
      return true;
    });
  });

  test("a bare name in the cache dir is hashed once, then its sidecar is trusted until mtime changes", async () => {
    const {o, modelsDir} = await opts();
    await mkdir(modelsDir, {recursive: true});
    const body = ggufBytes(5000);
    const file = join(modelsDir, "mine.gguf");
    await writeFile(file, body);

    const r1 = await resolveModel("mine.gguf", o);
    assert.deepEqual(r1, {path: file, sha256: sha256(body), source: "mine.gguf", kind: "cache"});
    const sidecar = JSON.parse(await readFile(`${file}.sha256.json`, "utf8"));
    const st = await stat(file);
    assert.deepEqual(sidecar, {sha256: sha256(body), size: 5000, mtimeMs: st.mtimeMs, source: "mine.gguf"});

    // A sidecar with matching size and mtime is believed without reading the file: a planted hash shows up.
    const planted = "a".repeat(64);
    await writeFile(`${file}.sha256.json`, JSON.stringify({...sidecar, sha256: planted}));
    assert.equal((await resolveModel("mine.gguf", o)).sha256, planted);

    // Once the mtime moves, the file is hashed again and the sidecar rewritten.
    await utimes(file, new Date(), new Date(Date.now() - 60_000));
    assert.equal((await resolveModel("mine.gguf", o)).sha256, sha256(body));
    assert.equal(JSON.parse(await readFile(`${file}.sha256.json`, "utf8")).sha256, sha256(body));
  });

  test("modelsDir is created when missing", async () => {
    const {o, modelsDir} = await opts();
    const file = join(tmp.dir, "local.gguf");
    await writeFile(file, ggufBytes(64));
    await resolveModel(file, o);
    assert.ok((await stat(modelsDir)).isDirectory());
  });

  test("a spec of unknown form fails with every source it tried", async () => {
    const {o, modelsDir} = await opts();
    await assert.rejects(resolveModel("s3-bucket-model.gguf", o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.equal(e.tried.length, 3);
      assert.match(e.tried[0] ?? "", /^local path '.*s3-bucket-model\.gguf' \(not found\)$/);
      assert.equal(e.tried[1], `cache '${join(modelsDir, "s3-bucket-model.gguf")}' (not present)`);
      assert.match(e.tried[2] ?? "", /remote source \(not of the form hf:.* or pypi:.*\)/);
      assert.match(e.message, /could not find model 's3-bucket-model\.gguf'\. Tried: local path/);
      assert.match(e.message, /Set SVC_MODEL to a local \.gguf path/);
      return true;
    });
  });

  test("malformed and path-escaping hf specs fail before any request", async () => {
    const {o} = await opts();
    const before = requests.length;
    for (const spec of ["hf:only-owner", "hf:o/r/../../etc/passwd.gguf", "hf:o/r/a//b.gguf"]) {
      await assert.rejects(resolveModel(spec, o), (e: unknown) => {
        assert.ok(e instanceof ModelSourceError, spec);
        assert.match(e.message, /cannot use model spec/);
        return true;
      });
    }
    assert.equal(requests.length, before);
  });
});

describe("hf source", () => {
  test("downloads through a redirect with token and x-linked-etag, writes a sidecar, then hits the cache", async () => {
    const body = ggufBytes(300_000, 7);
    routes.set("/org/repo/resolve/main/sub/model.gguf", (_req, res) => {
      res.writeHead(302, {location: "/cdn/blob-1", "x-linked-etag": `"${sha256(body)}"`}).end();
    });
    serve("/cdn/blob-1", body);
    const {o, modelsDir, logger} = await opts({env: {HF_ENDPOINT: endpoint, HF_TOKEN: "tok-123"}});
    const before = requests.length;

    const r = await resolveModel("hf:org/repo/sub/model.gguf", o);
    const target = join(modelsDir, "hf", "org", "repo", "main", "sub", "model.gguf");
    assert.deepEqual(r, {path: target, sha256: sha256(body), source: "hf:org/repo/sub/model.gguf", kind: "hf"});
    assert.ok((await readFile(target)).equals(body));
    const st = await stat(target);
    assert.deepEqual(JSON.parse(await readFile(`${target}.sha256.json`, "utf8")),
      {sha256: sha256(body), size: body.length, mtimeMs: st.mtimeMs, source: "hf:org/repo/sub/model.gguf"});
    assert.deepEqual(requests.slice(before).map((q) => q.url), ["/org/repo/resolve/main/sub/model.gguf", "/cdn/blob-1"]);
    assert.equal(requests[before]?.auth, "Bearer tok-123");
    assert.deepEqual(await partFiles(modelsDir), []);
    assert.ok(logger.lines.some((l) => / 100% /.test(l)), "a 100% progress line is logged");

    const again = await resolveModel("hf:org/repo/sub/model.gguf", o);
    assert.deepEqual(again, {...r, kind: "cache"});
    assert.equal(requests.length, before + 2, "no request on a cache hit");
  });

  test("an @revision goes into the URL and the cache path", async () => {
    const body = ggufBytes(100, 3);
    serve("/org/repo/resolve/v1.0/m.gguf", body);
    const {o, modelsDir} = await opts();
    const r = await resolveModel("hf:org/repo@v1.0/m.gguf", o);
    assert.equal(r.path, join(modelsDir, "hf", "org", "repo", "v1.0", "m.gguf"));
    assert.equal(r.sha256, sha256(body));
  });

  test("a body that disagrees with x-linked-etag is deleted and the error says expected vs got", async () => {
    const body = ggufBytes(2000, 9);
    const claimed = "b".repeat(64);
    serve("/org/repo/resolve/main/bad.gguf", body, {"x-linked-etag": `"${claimed}"`});
    const {o, modelsDir} = await opts();
    await assert.rejects(resolveModel("hf:org/repo/bad.gguf", o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.match(e.message, new RegExp(`sha256 mismatch: expected ${claimed} \\(x-linked-etag\\), got ${sha256(body)}`));
      return true;
    });
    assert.equal(await exists(join(modelsDir, "hf", "org", "repo", "main", "bad.gguf")), false);
    assert.deepEqual(await partFiles(modelsDir), []);
  });

  test("a known hash override that disagrees refuses the download", async () => {
    const body = ggufBytes(2000, 11);
    serve("/org/repo/resolve/main/known.gguf", body);
    const expected = "c".repeat(64);
    const {o, modelsDir} = await opts({knownHashes: {"hf:org/repo/known.gguf": expected}});
    await assert.rejects(resolveModel("hf:org/repo/known.gguf", o),
      new RegExp(`expected ${expected} \\(known hash for this spec\\), got ${sha256(body)}`));
    assert.equal(await exists(join(modelsDir, "hf", "org", "repo", "main", "known.gguf")), false);
  });

  test("a cached file that no longer matches its known hash is deleted and fetched again", async () => {
    const body = ggufBytes(4000, 13);
    serve("/org/repo/resolve/main/heal.gguf", body);
    const spec = "hf:org/repo/heal.gguf";
    const {o} = await opts({knownHashes: {[spec]: sha256(body)}});
    const first = await resolveModel(spec, o);
    await writeFile(first.path, ggufBytes(4000, 14)); // same size, new content and mtime
    const before = requests.length;
    const healed = await resolveModel(spec, o);
    assert.equal(healed.kind, "hf");
    assert.equal(healed.sha256, sha256(body));
    assert.ok((await readFile(healed.path)).equals(body));
    assert.equal(requests.length, before + 1);
  });

  test("a connection cut mid-body leaves neither a final file nor a part; stale parts are swept", async () => {
    routes.set("/org/repo/resolve/main/cut.gguf", (_req, res) => {
      res.writeHead(200, {"content-length": "100000"});
      res.write(ggufBytes(50_000), () => res.socket?.destroy());
    });
    const {o, modelsDir} = await opts();
    const dir = join(modelsDir, "hf", "org", "repo", "main");
    await mkdir(dir, {recursive: true});
    const stale = join(dir, `cut.gguf.part-${deadPid()}-deadbeef`);
    const live = join(dir, `cut.gguf.part-${process.ppid}-cafe0000`);
    await writeFile(stale, "old");
    await writeFile(live, "someone else's download in progress");

    await assert.rejects(resolveModel("hf:org/repo/cut.gguf", o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.match(e.message, /could not fetch hf:org\/repo\/cut\.gguf \(transfer failed: /);
      return true;
    });
    assert.equal(await exists(join(dir, "cut.gguf")), false);
    assert.equal(await exists(stale), false, "a part of a dead process is removed");
    assert.equal(await exists(live), true, "a part of a live process is left alone");
    assert.deepEqual(await partFiles(modelsDir), [join("hf", "org", "repo", "main", `cut.gguf.part-${process.ppid}-cafe0000`)]);
  });

  test("an abort mid-download rejects with the abort reason and leaves nothing behind", async () => {
    routes.set("/org/repo/resolve/main/slow.gguf", (_req, res) => {
      res.writeHead(200, {"content-length": "1000000"});
      res.write(ggufBytes(1000)); // then stall until the client gives up
    });
    const ac = new AbortController();
    const {o, modelsDir} = await opts({signal: ac.signal});
    const pending = resolveModel("hf:org/repo/slow.gguf", o);
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(pending, {name: "AbortError"});
    assert.equal(await exists(join(modelsDir, "hf", "org", "repo", "main", "slow.gguf")), false);
    assert.deepEqual(await partFiles(modelsDir), []);
  });

  test("a body that is not GGUF is refused and not kept", async () => {
    serve("/org/repo/resolve/main/page.gguf", Buffer.from("<html>login required</html>"));
    const {o, modelsDir} = await opts();
    await assert.rejects(resolveModel("hf:org/repo/page.gguf", o), /not a GGUF file \(starts with "<htm"/);
    assert.equal(await exists(join(modelsDir, "hf", "org", "repo", "main", "page.gguf")), false);
    assert.deepEqual(await partFiles(modelsDir), []);
  });

  test("a 404 names the URL and the cache path that were tried", async () => {
    const {o, modelsDir} = await opts();
    const url = `${endpoint}/org/repo/resolve/main/missing.gguf`;
    await assert.rejects(resolveModel("hf:org/repo/missing.gguf", o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.deepEqual(e.tried, [
        `cache '${join(modelsDir, "hf", "org", "repo", "main", "missing.gguf")}' (not present)`,
        `download ${url} (HTTP 404: no such repo, revision or file)`,
      ]);
      assert.ok(e.message.includes(url));
      assert.match(e.message, /HF_TOKEN/);
      return true;
    });
  });
});

describe("progress reporter", () => {
  test("line mode logs each 10% step exactly once, in order", () => {
    const logger = createMemoryLogger();
    let t = 0;
    const p = startProgress({label: "download x", total: 1000, mode: "lines", logger, now: () => (t += 100)});
    for (let done = 0; done <= 1000; done += 37) p.update(done);
    p.finish();
    const pcts = logger.lines.map((l) => Number(/download x (\d+)%/.exec(l)?.[1]));
    assert.deepEqual(pcts, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });
});
