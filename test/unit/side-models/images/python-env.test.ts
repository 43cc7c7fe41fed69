// Finding the Python the image worker runs on (side-models/images/python-env.ts): SVC_PYTHON alone when set, else the
// usual names then pyenv's versions newest first; an interpreter older than 3.12 is named in the start error; the
// venv's requirements pin the wheel by sha256.

import assert from "node:assert/strict";
import {mkdirSync, mkdtempSync, symlinkSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, test} from "node:test";
import {INFERNA_HASHES, INFERNA_PIN, PythonEnvError, findPython, pythonCandidates, requirements} from "../../../../src/side-models/images/python-env.ts";

describe("python candidates", () => {
  test("SVC_PYTHON is the only one asked when set", () => {
    assert.deepEqual(pythonCandidates({SVC_PYTHON: "/opt/py/bin/python3"}), ["/opt/py/bin/python3"]);
  });

  test("the usual names, then pyenv's 3.x versions newest first", () => {
    const root = mkdtempSync(join(tmpdir(), "svc-pyenv-"));
    for (const v of ["3.9.18", "3.13.0", "3.12.1", "3.12.10", "2.7.18", "system"]) mkdirSync(join(root, "versions", v), {recursive: true});
    const list = pythonCandidates({PYENV_ROOT: root});
    assert.deepEqual(list.slice(0, 4), ["python3.13", "python3.12", "python3.14", "python3"]);
    assert.deepEqual(list.slice(4), ["3.13.0", "3.12.10", "3.12.1", "3.9.18"].map((v) => join(root, "versions", v, "bin", "python3")));
  });
});

describe("findPython", () => {
  test("an interpreter older than 3.12 named by SVC_PYTHON is refused with its version and what to do", async () => {
    const old = (await import("node:child_process")).execFileSync("python3", ["-c", "import sys; print(sys.executable, '%d.%d' % sys.version_info[:2])"],
      {encoding: "utf8"}).trim().split(" ");
    if (Number(old[1]!.split(".")[1]) >= 12) return assert.equal((await findPython({SVC_PYTHON: old[0]})).path, old[0]);
    await assert.rejects(findPython({SVC_PYTHON: old[0]}), (e: Error) => {
      assert.ok(e instanceof PythonEnvError);
      assert.match(e.message, new RegExp(`SVC_PYTHON=${old[0]} is Python ${old[1]!.replace(".", "\\.")}`));
      assert.match(e.message, /needs Python 3\.12 or newer: point SVC_PYTHON at one/);
      return true;
    });
  });

  test("an SVC_PYTHON that does not run is named", async () => {
    await assert.rejects(findPython({SVC_PYTHON: "/nonexistent/python3"}), /SVC_PYTHON=\/nonexistent\/python3 did not run/);
  });

  test("with no Python 3.12 anywhere, the error lists what was found", async () => {
    const root = mkdtempSync(join(tmpdir(), "svc-nopy-"));
    const bin = join(root, "bin");
    mkdirSync(bin);
    symlinkSync("/bin/false", join(bin, "python3"));
    await assert.rejects(findPython({PATH: bin, PYENV_ROOT: join(root, "none"), HOME: root}), (e: Error) => {
      assert.match(e.message, /needs Python 3\.12 or newer, and none was found \(no python3 runs\)/);
      assert.match(e.message, /or set SVC_PYTHON to its path/);
      return true;
    });
  });
});

test("the requirements pin the wheel by its sha256", () => {
  assert.equal(requirements(), `${INFERNA_PIN} --hash=sha256:${INFERNA_HASHES[0]}\n`);
  assert.match(INFERNA_HASHES[0]!, /^[0-9a-f]{64}$/);
});
