// The JSON argument streamer: released text plus finish() always parses, wherever the value is cut.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {JsonStringDecoder, JsonValueStream} from "../../../../src/syntax/reply/json-stream.ts";

const SAMPLES = [
  '{"city": "Paris", "days": 3}',
  '{"a": {"b": [1, -2.5e+3, true, false, null, "s"]}, "c": [], "d": {}, "e": [[], [{}]]}',
  '{"esc": "q\\" b\\\\ n\\n u\\u00e9 \\ud83d\\ude00", "x": 0}',
  '[1, "two", {"three": 3}]',
  ' {\n  "spaced" : [ 1 , 2 ] ,\n  "k" : "v"\n}',
];

function cutAndClose(prefix: string): string {
  const s = new JsonValueStream();
  return s.push(prefix).out + s.finish();
}

describe("JsonValueStream", () => {
  test("every prefix closes into valid JSON", () => {
    for (const sample of SAMPLES) {
      for (let n = 0; n <= sample.length; n++) {
        const closed = cutAndClose(sample.slice(0, n));
        if (closed === "") continue; // nothing started yet
        assert.doesNotThrow(() => JSON.parse(closed), `prefix ${JSON.stringify(sample.slice(0, n))} -> ${closed}`);
      }
    }
  });

  test("a complete value round-trips and ends where it ends", () => {
    for (const sample of SAMPLES) {
      const s = new JsonValueStream();
      const r = s.push(`${sample}\n</tool_call>`);
      assert.ok(s.done);
      assert.equal(r.consumed, sample.length);
      assert.deepEqual(JSON.parse(r.out), JSON.parse(sample));
    }
  });

  test("char-by-char output equals whole output", () => {
    for (const sample of SAMPLES) {
      const whole = cutAndClose(sample);
      const s = new JsonValueStream();
      let out = "";
      for (const ch of sample) out += s.push(ch).out;
      assert.equal(out + s.finish(), whole);
    }
  });

  test("commas, numbers and escapes are held until decided", () => {
    const s = new JsonValueStream();
    assert.equal(s.push('{"a": 12').out, '{"a": ');
    assert.equal(s.push(", ").out, "12");
    assert.equal(s.push('"b": "x\\u00').out, ', "b": "x');
    assert.equal(s.push("e9").out, "\\u00e9");
  });

  test("repairs: raw control chars, invalid escapes, Python literals, trailing commas", () => {
    assert.deepEqual(JSON.parse(cutAndClose('{"s": "a\nb\\q", "t": True, "n": None, "l": [1,], }')),
      {s: "a\nb\\q", t: true, n: null, l: [1]});
  });

  test("a stray char fails the value without consuming it", () => {
    const s = new JsonValueStream();
    const r = s.push('{"a": 1 <');
    assert.ok(s.failed);
    assert.equal(r.consumed, 8);
    assert.deepEqual(JSON.parse(r.out + s.finish()), {a: 1});
  });
});

describe("JsonStringDecoder", () => {
  test("decodes escapes split across pushes and stops at the closing quote", () => {
    const d = new JsonStringDecoder();
    const out: (string | null)[] = [];
    for (const ch of 'a\\"\\u00e9\\n"') out.push(d.push(ch));
    assert.deepEqual(out, ["a", "", '"', "", "", "", "", "", "é", "", "\n", null]);
  });
});
