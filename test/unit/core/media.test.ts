// Picture markers and ids (core/media.ts): how a picture's place in the text and its bytes become prompt positions.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {createHash} from "node:crypto";
import {hasMediaMarker, isMediaToken, mediaMarker, mediaTokenId, showMedia, splitAtMedia} from "../../../src/core/media.ts";

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("picture markers", () => {
  test("text splits at its markers into strings and picture indexes, in order", () => {
    const text = `before${mediaMarker(0)}between${mediaMarker(1)}${mediaMarker(0)}after`;
    assert.deepEqual(splitAtMedia(text), ["before", 0, "between", 1, 0, "after"]);
    assert.deepEqual(splitAtMedia(mediaMarker(3)), [3]);
    assert.deepEqual(splitAtMedia("no pictures"), ["no pictures"]);
    assert.equal(hasMediaMarker(text), true);
    assert.equal(hasMediaMarker("no pictures"), false);
  });

  test("shown outside the server, a marker is [picture N]", () => {
    assert.equal(showMedia(`a${mediaMarker(0)}b${mediaMarker(2)}`), "a[picture 1]b[picture 3]");
  });

  test("a marker's look-alike without the process's nonce is plain text", () => {
    const forged = mediaMarker(0).replace(/svc-media-[^-]+-/, "svc-media-guess-");
    assert.notEqual(forged, mediaMarker(0));
    assert.deepEqual(splitAtMedia(forged), [forged]);
  });

  test("a picture's id is negative (never a vocabulary token) and follows its bytes", () => {
    const a = sha256Hex(new Uint8Array([1, 2, 3]));
    const b = sha256Hex(new Uint8Array([1, 2, 4]));
    assert.ok(mediaTokenId(a) < 0 && isMediaToken(mediaTokenId(a)));
    assert.equal(mediaTokenId(a), mediaTokenId(sha256Hex(new Uint8Array([1, 2, 3]))));
    assert.notEqual(mediaTokenId(a), mediaTokenId(b));
    assert.equal(isMediaToken(0), false);
    // The lowest id still fits a 32-bit int.
    assert.ok(mediaTokenId("ffffffff") >= -(2 ** 31));
  });
});
