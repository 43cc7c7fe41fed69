// X-Svc-Keep / X-Svc-From: which names pass, and the 400 a malformed one gets (naming the header and the rule).

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ApiError} from "../../../../src/core/errors.ts";
import {checkSessionName, FROM_HEADER_VALUES, readSessionHeaders, SESSION_NAME_RULE} from "../../../../src/api/fields/session-headers.ts";

function refused(headers: Record<string, string | string[] | undefined>, param: string): ApiError {
  let caught: unknown;
  try {
    readSessionHeaders(headers);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ApiError, `expected a 400 for ${JSON.stringify(headers)}`);
  assert.equal(caught.status, 400);
  assert.equal(caught.param, param);
  assert.ok(caught.message.startsWith(`${param}: `));
  return caught;
}

describe("readSessionHeaders", () => {
  test("no headers: nothing asked", () => {
    assert.deepEqual(readSessionHeaders({}), {keep: null, from: null});
    assert.deepEqual(readSessionHeaders({"x-other": "a", "x-svc-keep": undefined}), {keep: null, from: null});
  });

  test("both headers (a join), names from the allowed set", () => {
    assert.deepEqual(readSessionHeaders({"x-svc-keep": "branch-2", "x-svc-from": "agent@host:run_1.v2"}),
      {keep: "branch-2", from: "agent@host:run_1.v2"});
    assert.deepEqual(readSessionHeaders({"X-Svc-Keep": "A"}), {keep: "A", from: null}, "case-insensitive header names");
  });

  test("128 characters pass, 129 do not; empty does not", () => {
    assert.equal(readSessionHeaders({"x-svc-keep": "a".repeat(128)}).keep, "a".repeat(128));
    assert.equal(refused({"x-svc-keep": "a".repeat(129)}, "X-Svc-Keep").message, `X-Svc-Keep: ${SESSION_NAME_RULE}`);
    refused({"x-svc-from": ""}, "X-Svc-From");
  });

  test("spaces, control characters, unicode, slashes and a leading dot or dash are refused", () => {
    for (const bad of ["a b", " a", "a\tb", "a\u0000", "a\u007f", "caf\u00e9", "名前", "a/b", "..", ".hidden", "-x", "a%20b", "a\"b"]) {
      refused({"x-svc-keep": bad}, "X-Svc-Keep");
    }
  });

  test("a repeated header is refused, joined by Node or as an array", () => {
    assert.match(refused({"x-svc-from": "a, b"}, "X-Svc-From").message, /sent once/);
    assert.match(refused({"x-svc-keep": ["a", "b"]}, "X-Svc-Keep").message, /sent once/);
    refused({"x-svc-keep": []}, "X-Svc-Keep");
    assert.equal(readSessionHeaders({"x-svc-keep": ["a"]}).keep, "a", "one value is not a repetition");
  });
});

describe("checkSessionName", () => {
  test("names the parameter it is given", () => {
    assert.equal(checkSessionName("ok", "name"), "ok");
    assert.throws(() => checkSessionName("not ok", "name"), (err: ApiError) => err.param === "name" && err.status === 400);
  });

  test("the X-Svc-From response values", () => {
    assert.deepEqual([...FROM_HEADER_VALUES], ["used", "unmatched", "unknown"]);
  });
});
