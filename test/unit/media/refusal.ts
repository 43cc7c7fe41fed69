// The check every picture refusal must pass, shared by the picture and BMP tests.

import assert from "node:assert/strict";
import {isApiError} from "../../../src/core/errors.ts";

/** An assert.throws/rejects check: a 400 ApiError about `field` whose message matches every pattern. */
export function refusal(field: string, ...patterns: RegExp[]): (err: unknown) => true {
  return (err) => {
    assert.ok(isApiError(err), `not an ApiError: ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.param, field);
    assert.ok(err.message.startsWith(`${field}: `), err.message);
    for (const pattern of patterns) assert.match(err.message, pattern);
    return true;
  };
}
