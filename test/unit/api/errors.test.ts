// The error catalogue, the OpenAI error shape, turning thrown things into ApiErrors, and the API-key check.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ApiError, invalidField, invalidRequest, isApiError, type ErrorKind} from "../../../src/core/errors.ts";
import {openAiErrorBody, toApiError} from "../../../src/api/error-body.ts";
import {EngineRestartingError, EngineUnavailableError} from "../../../src/engine/errors.ts";
import {isOpenRoute, makeKeyCheck, presentedKeys} from "../../../src/api/auth.ts";

describe("ApiError kinds", () => {
  const table: [ErrorKind, number, string, string | null][] = [
    ["invalid_request", 400, "invalid_request_error", null],
    ["context_length", 400, "invalid_request_error", "context_length_exceeded"],
    ["unauthorized", 401, "authentication_error", "invalid_api_key"],
    ["not_found", 404, "not_found_error", null],
    ["payload_too_large", 413, "invalid_request_error", "request_too_large"],
    ["unsupported_media", 415, "invalid_request_error", "unsupported_media_type"],
    ["client_closed", 499, "client_closed_request", "client_closed"],
    ["server_error", 500, "server_error", null],
    ["engine_busy", 503, "server_error", "engine_busy"],
    ["model_restarting", 503, "server_error", "model_restarting"],
    ["engine_unavailable", 502, "server_error", "engine_unavailable"],
  ];
  for (const [kind, status, type, code] of table) {
    test(`${kind}: ${status} ${type} ${code}`, () => {
      const e = new ApiError(kind, "m");
      assert.deepEqual({kind: e.kind, status: e.status, type: e.type, code: e.code, param: e.param, headers: e.headers, message: e.message},
        {kind, status, type, code, param: null, headers: {}, message: "m"});
      assert.ok(e instanceof Error);
      assert.equal(isApiError(e), true);
    });
  }

  test("param and headers are kept", () => {
    const e = new ApiError("engine_busy", "busy", {param: "x", headers: {"Retry-After": "5"}});
    assert.equal(e.param, "x");
    assert.deepEqual(e.headers, {"Retry-After": "5"});
  });

  test("invalidField and invalidRequest", () => {
    const f = invalidField("messages[2].role", "must be one of user");
    assert.deepEqual([f.status, f.message, f.param], [400, "messages[2].role: must be one of user", "messages[2].role"]);
    const r = invalidRequest("bad");
    assert.deepEqual([r.status, r.message, r.param], [400, "bad", null]);
    assert.equal(invalidRequest("bad", "n").param, "n");
  });

  test("isApiError is false for other errors", () => {
    assert.equal(isApiError(new Error("x")), false);
    assert.equal(isApiError({status: 400, message: "x"}), false);
    assert.equal(isApiError(null), false);
  });
});

describe("openAiErrorBody", () => {
  test("{error: {message, type, param, code}} and nothing else", () => {
    assert.deepEqual(openAiErrorBody(invalidField("temperature", "must be a number")), {
      error: {message: "temperature: must be a number", type: "invalid_request_error", param: "temperature", code: null},
    });
    assert.deepEqual(openAiErrorBody(new ApiError("unauthorized", "no key")), {
      error: {message: "no key", type: "authentication_error", param: null, code: "invalid_api_key"},
    });
  });
});

describe("toApiError", () => {
  test("an ApiError is returned as is", () => {
    const e = new ApiError("not_found", "gone");
    assert.equal(toApiError(e), e);
  });

  test("fastify body errors", () => {
    const big = toApiError(Object.assign(new Error("Request body is too large"), {code: "FST_ERR_CTP_BODY_TOO_LARGE", statusCode: 413}));
    assert.deepEqual([big.status, big.kind, big.message], [413, "payload_too_large", "the request body is larger than this server takes (SVC_BODY_LIMIT_MB)"]);
    const empty = toApiError(Object.assign(new Error("Body cannot be empty"), {code: "FST_ERR_CTP_EMPTY_JSON_BODY", statusCode: 400}));
    assert.deepEqual([empty.status, empty.kind, empty.message], [400, "invalid_request", "the request body is empty; send a JSON object"]);
    const media = toApiError(Object.assign(new Error("Unsupported Media Type"), {code: "FST_ERR_CTP_INVALID_MEDIA_TYPE", statusCode: 415}));
    assert.deepEqual([media.status, media.code], [415, "unsupported_media_type"]);
    const len = toApiError(Object.assign(new Error("x"), {code: "FST_ERR_CTP_INVALID_CONTENT_LENGTH", statusCode: 400}));
    assert.deepEqual([len.status, len.message], [400, "the Content-Length header does not match the body"]);
  });

  test("another 4xx (e.g. a JSON syntax error) keeps its message as a 400", () => {
    const e = toApiError(Object.assign(new SyntaxError("Unexpected token } in JSON at position 9"), {statusCode: 400}));
    assert.deepEqual([e.status, e.kind, e.message], [400, "invalid_request", "Unexpected token } in JSON at position 9"]);
  });

  test("a remote replica lost mid-reply is a 502 engine_unavailable with the engine's message", () => {
    const e = toApiError(new EngineUnavailableError("the engine replica stopped answering"));
    assert.deepEqual([e.status, e.code, e.message], [502, "engine_unavailable", "the engine replica stopped answering"]);
  });
  test("a side model's child lost or restarting is a 503 model_restarting with Retry-After and the engine's message", () => {
    const e = toApiError(new EngineRestartingError("the speech model nx3-asr-0.6b stopped while transcribing; retry in 2 s", 2));
    assert.deepEqual([e.status, e.code, e.type, e.headers, e.message],
      [503, "model_restarting", "server_error", {"Retry-After": "2"}, "the speech model nx3-asr-0.6b stopped while transcribing; retry in 2 s"]);
  });
  test("a plain Error is a 500 naming it", () => {
    const e = toApiError(new Error("disk on fire"));
    assert.deepEqual([e.status, e.kind, e.type, e.message], [500, "server_error", "server_error", "internal error: disk on fire"]);
  });

  test("a 5xx statusCode is still a 500", () => {
    assert.equal(toApiError(Object.assign(new Error("x"), {statusCode: 502})).status, 500);
  });

  test("non-errors thrown", () => {
    assert.equal(toApiError("oops").message, "internal error: oops");
    assert.equal(toApiError(undefined).message, "internal error: undefined");
    assert.equal(toApiError(null).message, "internal error: null");
    assert.equal(toApiError(42).status, 500);
  });
});

describe("presentedKeys", () => {
  test("Bearer, any case, trimmed", () => {
    assert.deepEqual(presentedKeys({authorization: "Bearer k1"}), ["k1"]);
    assert.deepEqual(presentedKeys({authorization: "bearer k1"}), ["k1"]);
    assert.deepEqual(presentedKeys({authorization: "BEARER   k1  "}), ["k1"]);
  });
  test("x-api-key", () => {
    assert.deepEqual(presentedKeys({"x-api-key": "k2"}), ["k2"]);
    assert.deepEqual(presentedKeys({"x-api-key": ""}), []);
  });
  test("both headers give both keys, Authorization first", () => {
    assert.deepEqual(presentedKeys({authorization: "Bearer a", "x-api-key": "b"}), ["a", "b"]);
  });
  test("other schemes and no headers give none", () => {
    assert.deepEqual(presentedKeys({authorization: "Basic dXNlcjpwYXNz"}), []);
    assert.deepEqual(presentedKeys({authorization: "Bearer"}), []);
    assert.deepEqual(presentedKeys({}), []);
  });
});

describe("makeKeyCheck", () => {
  const check = makeKeyCheck("s3cret");
  function refusal(headers: Record<string, string>): ApiError {
    try {
      check(headers);
    } catch (err) {
      assert.ok(err instanceof ApiError);
      return err;
    }
    assert.fail("the key check let the request through");
  }

  test("the right key in either header passes", () => {
    assert.doesNotThrow(() => check({authorization: "Bearer s3cret"}));
    assert.doesNotThrow(() => check({authorization: "bearer s3cret"}));
    assert.doesNotThrow(() => check({"x-api-key": "s3cret"}));
  });

  test("the right key in one header beside a wrong one in the other passes", () => {
    assert.doesNotThrow(() => check({authorization: "Bearer wrong", "x-api-key": "s3cret"}));
    assert.doesNotThrow(() => check({authorization: "Bearer s3cret", "x-api-key": "wrong"}));
  });

  test("no key: 401 saying how to send one", () => {
    const e = refusal({});
    assert.equal(e.status, 401);
    assert.equal(e.type, "authentication_error");
    assert.equal(e.message, "this server needs an API key: send Authorization: Bearer <key> or x-api-key: <key>");
  });

  test("a wrong key: 401 saying it is not valid", () => {
    const wrong: Record<string, string>[] = [{authorization: "Bearer nope"}, {"x-api-key": "s3cre"}, {"x-api-key": "s3cret2"}, {authorization: "Bearer S3CRET"}];
    for (const headers of wrong) {
      const e = refusal(headers);
      assert.equal(e.status, 401);
      assert.equal(e.message, "the API key is not valid for this server");
    }
  });

  test("a non-Bearer Authorization counts as no key", () => {
    assert.equal(refusal({authorization: "s3cret"}).message, "this server needs an API key: send Authorization: Bearer <key> or x-api-key: <key>");
  });
});

describe("isOpenRoute", () => {
  test("GET and HEAD /health, with or without a query", () => {
    assert.equal(isOpenRoute("GET", "/health"), true);
    assert.equal(isOpenRoute("HEAD", "/health"), true);
    assert.equal(isOpenRoute("GET", "/health?verbose=1"), true);
  });
  test("everything else needs the key", () => {
    assert.equal(isOpenRoute("POST", "/health"), false);
    assert.equal(isOpenRoute("GET", "/health/"), false);
    assert.equal(isOpenRoute("GET", "/healthz"), false);
    assert.equal(isOpenRoute("GET", "/v1/models"), false);
    assert.equal(isOpenRoute("POST", "/v1/chat/completions"), false);
    assert.equal(isOpenRoute("GET", "/v1/health"), false);
    assert.equal(isOpenRoute("POST", "/"), false);
    assert.equal(isOpenRoute("POST", "/playground/app.js"), false);
    assert.equal(isOpenRoute("GET", "/playgroundx"), false);
  });
  test("the playground page and its static assets load without the key (the page asks for it)", () => {
    assert.equal(isOpenRoute("GET", "/"), true);
    assert.equal(isOpenRoute("GET", "/?x=1"), true);
    assert.equal(isOpenRoute("GET", "/playground/app.js"), true);
    assert.equal(isOpenRoute("GET", "/playground/vendor/preact.mjs"), true);
  });
});
