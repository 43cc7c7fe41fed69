// The whisper.cpp binding (@napi-rs/whisper, an N-API addon) loads in this process, without a model, and its language
// table is the one languages.ts holds: code and full name for each of the 99 ids, yue (id 99, large-v3's) the last.
// The speech engine runs it in a child of the server (whisper-child.ts), under the same Node; the nodes test tier runs
// this file under each pinned Node version, so an addon that does not load there fails here.

import assert from "node:assert/strict";
import {test} from "node:test";
import {Whisper} from "@napi-rs/whisper";
import {LANGUAGE_COUNT, languageName, whisperLanguage} from "../../../../src/side-models/speech/languages.ts";

test("the binding's language ids name the languages of languages.ts, in whisper.cpp's order", () => {
  assert.equal(LANGUAGE_COUNT, 99);
  assert.equal(Whisper.maxLangId(), 99);
  for (let id = 0; id < LANGUAGE_COUNT; id++) {
    const code = Whisper.lang(id);
    assert.ok(code !== null, `id ${id} has no code`);
    assert.equal(whisperLanguage(code), code, `id ${id}`);
    assert.equal(languageName(code), Whisper.langFull(id), `id ${id}`);
    assert.equal(Whisper.langId(code), id);
  }
  assert.equal(Whisper.lang(99), "yue");
  assert.equal(whisperLanguage("yue"), null);
  assert.equal(Whisper.langId("xx"), -1);
});
