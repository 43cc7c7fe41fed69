// The speech route's other WAV layouts (test/slow/speech.test.ts checks 8 kHz and 44.1 kHz float)
// and a recording longer than one 30 s window, transcribed window by window: each is seconds of Whisper on 2 cores.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {get} from "../../support/server.ts";
import {concat, duration, encodeWav, silence, speak, type Audio} from "../../support/speech-audio.ts";
import {wordErrorRate} from "../../support/word-error-rate.ts";
import {LAYOUTS, LONG_PASSAGES, speech, startSpeech, transcribe, VOICE, WER_BOUND, layoutTests} from "../e2e/speech-fixture.ts";

const E2E_LAYOUTS = ["8 kHz 16-bit mono", "44.1 kHz 32-bit float mono"];

before(startSpeech);
after(async () => {
  await speech.server?.stop();
});

describe("speech to text: every other layout, and a long recording", {concurrency: 1}, () => {
  layoutTests(LAYOUTS.map(([name]) => name).filter((name) => !E2E_LAYOUTS.includes(name)));

  test("a recording longer than one window is transcribed window by window, words intact", async () => {
    // Three different passages (18.7, 12.0 and 17.7 s) with 4 s of silence between: 56.4 s, cut in the two pauses.
    // The last passage is long enough that wherever in the first pause (18.7 to 22.7 s) the first cut falls, the
    // second window (30 s from it) ends before the recording does: with a 10.8 s last passage (49.5 s in all), a
    // cut late in that pause left two windows, and the count depended on where in pure silence the cut landed.
    const parts: Audio[] = [];
    for (const text of LONG_PASSAGES) parts.push(await speak(text, VOICE));
    console.log(`# passages ${parts.map((p) => duration(p).toFixed(1)).join(", ")} s`);
    const pause = silence(4, speech.audio.rate);
    const long = Buffer.from(encodeWav(concat(parts[0]!, pause, parts[1]!, pause, parts[2]!), {bits: 16}));
    const before = (await get(`${speech.server.url}/health`)).body.side_models.passes as number;
    const r = await transcribe(long, {response_format: "verbose_json"});
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.duration > 30, `duration ${r.body.duration}`);
    const passes = (await get(`${speech.server.url}/health`)).body.side_models.passes as number;
    // Each cut falls in the pauses between readings (the quietest 200 ms of a window's second half): 3 windows.
    const windows = passes - before;
    assert.equal(windows, 3, `${windows} windows for ${r.body.duration} s`);
    const wer = wordErrorRate(LONG_PASSAGES.join(" "), r.body.text);
    console.log(`# ${r.body.duration.toFixed(1)} s in ${windows} windows: WER ${wer.toFixed(3)}`);
    assert.ok(wer <= WER_BOUND, `WER ${wer} over windows: ${r.body.text}`);
    assert.ok(r.body.segments.some((s: {start: number}) => s.start > 30), "segments after the first window carry their offset");
  });

});
