// WAV reading for the speech route: headers and samples checked against files an independent encoder writes
// (wave-codec through support/speech-audio.ts, read back by wave-codec's own reader where soxi used to tell), the
// resampler's accuracy (passband, aliasing, imaging), the refusals by magic, and the window cuts.

import assert from "node:assert/strict";
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, describe, test} from "node:test";
import {decodeWavMono16k, readWavInfo, splitWindows, toPcm16, WavError} from "../../../../src/media/wav.ts";
import {decodeWav, duration, encodeWav, frames, silence, sine, type Audio, type Layout, type SampleEncoding} from "../../../../support/speech-audio.ts";

const dir = mkdtempSync(join(tmpdir(), "speech-wav-"));
after(() => rmSync(dir, {recursive: true, force: true}));

type SineWav = {rate: number; seconds: number; hz: number; amplitude?: number; channels?: number; bits?: Layout["bits"]; encoding?: SampleEncoding};
/** What `sox -D -n -r RATE -c CH -b BITS -e ENC out.wav synth SECONDS sine HZ vol AMPLITUDE` wrote (amplitude 1 unless given). */
const sineWav = (o: SineWav): Uint8Array => encodeWav(sine({amplitude: 1, ...o}), o);
/** Channels taken from the first of `from` (1) or silent (0), as sox's `remix 1 0 ...`. */
const remixed = (from: Audio, picks: number[]): Audio =>
  ({rate: from.rate, channels: picks.map((k) => (k ? from.channels[0]!.slice() : new Float32Array(frames(from))))});

/** Power of y minus the ideal amp·sin(2π·hz·t) over the middle (edges skipped), relative to the ideal's, in dB. */
function errorDb(y: Float32Array, hz: number, amp: number): number {
  let err = 0, ref = 0;
  for (let i = 1600; i < y.length - 1600; i++) {
    const ideal = amp * Math.sin((2 * Math.PI * hz * i) / 16000);
    err += (y[i]! - ideal) ** 2;
    ref += ideal ** 2;
  }
  return 10 * Math.log10(err / ref);
}

/** Amplitude of the hz component over the middle of y (a single-bin DFT / Goertzel). */
function amplitudeAt(y: Float32Array, hz: number): number {
  let c = 0, s = 0, n = 0;
  for (let i = 1600; i < y.length - 1600; i++, n++) {
    c += y[i]! * Math.cos((2 * Math.PI * hz * i) / 16000);
    s += y[i]! * Math.sin((2 * Math.PI * hz * i) / 16000);
  }
  return (2 * Math.hypot(c, s)) / n;
}

function rmsDb(y: Float32Array, ref: number): number {
  let e = 0;
  for (let i = 1600; i < y.length - 1600; i++) e += y[i]! ** 2;
  return 10 * Math.log10(e / (y.length - 3200) / (ref * ref / 2));
}

function zeroCrossings(y: Float32Array, from: number, to: number): number {
  let n = 0;
  for (let i = from + 1; i < to; i++) if ((y[i - 1]! < 0) !== (y[i]! < 0)) n++;
  return n;
}

function refusal(buf: Uint8Array, pattern: RegExp): WavError {
  let caught: unknown;
  try {
    readWavInfo(buf);
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof WavError, `expected a WavError, got ${String(caught)}`);
  assert.match(caught.message, /WAV/);
  assert.match(caught.message, pattern);
  assert.throws(() => decodeWavMono16k(buf), WavError);
  return caught;
}

const bytes = (...parts: Array<string | number[]>) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...Buffer.from(p, "latin1")] : p)));

describe("readWavInfo against an independent encoder and reader", () => {
  const cases = [
    {rate: 44100, ch: 2, bits: 16, enc: "signed", format: "pcm"},
    {rate: 44100, ch: 2, bits: 24, enc: "signed", format: "pcm"},
    {rate: 16000, ch: 1, bits: 32, enc: "signed", format: "pcm"},
    {rate: 22050, ch: 1, bits: 8, enc: "unsigned", format: "pcm"},
    {rate: 48000, ch: 1, bits: 32, enc: "float", format: "float"},
    {rate: 8000, ch: 1, bits: 64, enc: "float", format: "float"},
    {rate: 96000, ch: 6, bits: 16, enc: "signed", format: "pcm"},
    {rate: 11025, ch: 3, bits: 24, enc: "signed", format: "pcm"},
    {rate: 7, ch: 1, bits: 16, enc: "signed", format: "pcm"},
  ] as const;
  for (const c of cases) {
    test(`${c.rate} Hz, ${c.ch} ch, ${c.bits}-bit ${c.enc}`, () => {
      const seconds = c.rate === 7 ? 10 : 0.75;
      const buf = sineWav({rate: c.rate, channels: c.ch, bits: c.bits, encoding: c.enc, seconds, hz: Math.min(1000, c.rate / 3), amplitude: 0.5});
      // wave-codec's reader says what the file holds, as soxi did; the request says what it should hold.
      const theirs = decodeWav(buf);
      const info = readWavInfo(buf);
      assert.equal(info.sampleRate, theirs.audio.rate);
      assert.equal(info.channels, theirs.audio.channels.length);
      assert.equal(info.bitsPerSample, theirs.bits);
      assert.equal(info.format, c.format);
      assert.equal(info.frames, frames(theirs.audio));
      assert.ok(Math.abs(info.durationS - duration(theirs.audio)) < 1e-6);
      assert.deepEqual([info.sampleRate, info.channels, info.bitsPerSample, info.frames], [c.rate, c.ch, c.bits, Math.round(seconds * c.rate)]);
      // One resampling step: the output length is the duration at 16 kHz within one sample.
      const y = decodeWavMono16k(buf);
      assert.ok(Math.abs(y.length - (info.frames * 16000) / info.sampleRate) <= 1, `length ${y.length}`);
    });
  }

  test("a WAVE_FORMAT_EXTENSIBLE header (6 channels, as sox writes them too) is read through its sub-format GUID", () => {
    const buf = encodeWav(remixed(sine({rate: 16000, seconds: 1, hz: 1000, amplitude: 0.6}), [1, 0, 0, 0, 0, 0]), {bits: 16});
    assert.equal(new DataView(buf.buffer).getUint16(20, true), 0xfffe);
    const info = readWavInfo(buf);
    assert.deepEqual(info, {sampleRate: 16000, channels: 6, bitsPerSample: 16, format: "pcm", frames: 16000, durationS: 1});
    // One channel of six carries the sine: the average has a sixth of its amplitude, no resampling at 16 kHz.
    const y = decodeWavMono16k(buf);
    assert.equal(y.length, 16000);
    assert.ok(Math.abs(amplitudeAt(y, 1000) - 0.1) < 0.001);
  });

  test("24-bit stereo is written extensible (PCM GUID), as sox does; a hand-made extensible float header reads too", () => {
    const buf = sineWav({rate: 44100, channels: 2, bits: 24, seconds: 0.5, hz: 1000, amplitude: 0.5});
    assert.equal(new DataView(buf.buffer).getUint16(20, true), 0xfffe);
    assert.equal(readWavInfo(buf).frames, 22050);
    const guid = (code: number) => [code, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71];
    const ext = (code: number) => bytes("RIFF", [68, 0, 0, 0], "WAVE", "fmt ", [40, 0, 0, 0],
      [0xfe, 0xff, 1, 0, 0x80, 0x3e, 0, 0, 0, 0xfa, 0, 0, 4, 0, 32, 0, 22, 0, 32, 0, 4, 0, 0, 0], guid(code),
      "data", [8, 0, 0, 0], [...new Uint8Array(new Float32Array([0.25, -0.5]).buffer)]);
    assert.deepEqual(readWavInfo(ext(3)), {sampleRate: 16000, channels: 1, bitsPerSample: 32, format: "float", frames: 2, durationS: 2 / 16000});
    assert.deepEqual([...decodeWavMono16k(ext(3))], [0.25, -0.5]);
    assert.equal(readWavInfo(ext(1)).format, "pcm");
    const odd = ext(3);
    odd[50] = 0x42; // not the KSDATAFORMAT GUID tail
    assert.throws(() => readWavInfo(odd), (e: unknown) => e instanceof WavError && /unknown sub-format GUID/.test(e.message));
  });
});

describe("decodeWavMono16k: samples and resampling", () => {
  test("a 1 kHz sine at 44.1 kHz comes out at 16 kHz with its amplitude, frequency and < -60 dB error", () => {
    const y = decodeWavMono16k(sineWav({rate: 44100, channels: 1, bits: 24, seconds: 2, hz: 1000, amplitude: 0.5}));
    assert.equal(y.length, 32000);
    assert.ok(Math.abs(amplitudeAt(y, 1000) - 0.5) < 0.0005);
    assert.ok(amplitudeAt(y, 3000) < 0.5e-3 && amplitudeAt(y, 6000) < 0.5e-3);
    assert.equal(zeroCrossings(y, 8004, 24004), 2000); // one second: 1000 periods (bounds off the zeros)
    const db = errorDb(y, 1000, 0.5);
    assert.ok(db < -60, `error ${db.toFixed(1)} dB`);
  });

  test("every encoding decodes the same sine to [-1, 1] at the right amplitude", () => {
    const formats = [{bits: 16}, {bits: 24}, {bits: 32}, {encoding: "float", bits: 32}, {encoding: "float", bits: 64},
      {encoding: "unsigned", bits: 8}] as const;
    for (const f of formats) {
      const y = decodeWavMono16k(sineWav({rate: 16000, channels: 1, ...f, seconds: 1, hz: 1000, amplitude: 0.5}));
      const name = JSON.stringify(f);
      const tol = f.bits === 8 ? 0.01 : 0.0005;
      assert.ok(Math.abs(amplitudeAt(y, 1000) - 0.5) < tol, `${name}: ${amplitudeAt(y, 1000)}`);
      assert.ok(errorDb(y, 1000, 0.5) < (f.bits === 8 ? -35 : -80), `${name}: ${errorDb(y, 1000, 0.5)}`);
    }
  });

  test("7.5 kHz at 44.1 kHz (just under the new Nyquist) stays within -40 dB", () => {
    const y = decodeWavMono16k(sineWav({rate: 44100, channels: 1, bits: 24, seconds: 2, hz: 7500, amplitude: 0.5}));
    const db = errorDb(y, 7500, 0.5);
    assert.ok(db < -40, `error ${db.toFixed(1)} dB`);
  });

  test("downsampling 48 kHz: a 10 kHz tone does not alias into the passband (< -50 dB)", () => {
    const y = decodeWavMono16k(sineWav({rate: 48000, channels: 1, bits: 24, seconds: 2, hz: 10000, amplitude: 0.5}));
    assert.equal(y.length, 32000);
    const db = rmsDb(y, 0.5);
    assert.ok(db < -50, `alias ${db.toFixed(1)} dB`);
    assert.ok(amplitudeAt(y, 6000) < 0.5 * 10 ** (-50 / 20)); // where 10 kHz would fold to
  });

  test("upsampling 8 kHz: 1 kHz comes out without images (< -60 dB)", () => {
    const y = decodeWavMono16k(sineWav({rate: 8000, channels: 1, bits: 24, seconds: 2, hz: 1000, amplitude: 0.5}));
    assert.equal(y.length, 32000);
    assert.ok(errorDb(y, 1000, 0.5) < -60);
    assert.ok(amplitudeAt(y, 7000) < 0.5e-3); // the image of 1 kHz around 8 kHz
  });

  test("an odd rate (96001 Hz, interpolated polyphase table) resamples as accurately", () => {
    const y = decodeWavMono16k(sineWav({rate: 96001, channels: 1, bits: 24, seconds: 1, hz: 1000, amplitude: 0.5}));
    assert.ok(Math.abs(y.length - 16000) <= 1);
    assert.ok(errorDb(y, 1000, 0.5) < -60, `${errorDb(y, 1000, 0.5)}`);
  });

  test("stereo is averaged: sine on the left, silence on the right → half amplitude", () => {
    const y = decodeWavMono16k(encodeWav(remixed(sine({rate: 44100, seconds: 1, hz: 1000, amplitude: 0.8}), [1, 0]), {bits: 16}));
    assert.ok(Math.abs(amplitudeAt(y, 1000) - 0.4) < 0.001);
  });

  test("8-bit unsigned: 128 is zero, 0 is -1, 255 is 127/128", () => {
    const silent = decodeWavMono16k(encodeWav(silence(0.1, 16000), {encoding: "unsigned", bits: 8}));
    assert.equal(silent.length, 1600);
    assert.ok(silent.every((v) => v === 0));
    const fmt = [1, 0, 1, 0, 0x80, 0x3e, 0, 0, 0x80, 0x3e, 0, 0, 1, 0, 8, 0];
    const hand = bytes("RIFF", [39, 0, 0, 0], "WAVE", "fmt ", [16, 0, 0, 0], fmt, "data", [3, 0, 0, 0], [128, 0, 255], [0]);
    assert.deepEqual([...decodeWavMono16k(hand)], [0, -1, 127 / 128]);
  });

  test("a 60 s 44.1 kHz stereo file decodes whole", () => {
    const y = decodeWavMono16k(sineWav({rate: 44100, channels: 2, bits: 16, seconds: 60, hz: 440, amplitude: 0.5}));
    assert.equal(y.length, 960000);
    const tail = y.subarray(900000);
    assert.ok(Math.abs(amplitudeAt(tail, 440) - 0.5) < 0.001);
  });
});

describe("readWavInfo: chunk walking and damaged files", () => {
  const plain = () => sineWav({rate: 16000, channels: 1, bits: 16, seconds: 0.5, hz: 500, amplitude: 0.5});

  test("an odd-sized LIST chunk (with its pad byte) before data is skipped", () => {
    const orig = plain();
    assert.equal(Buffer.from(orig.subarray(36, 40)).toString("latin1"), "data");
    const list = bytes("LIST", [5, 0, 0, 0], "INFOx", [0]);
    const buf = new Uint8Array(orig.length + list.length);
    buf.set(orig.subarray(0, 36));
    buf.set(list, 36);
    buf.set(orig.subarray(36), 36 + list.length);
    new DataView(buf.buffer).setUint32(4, buf.length - 8, true);
    assert.deepEqual(readWavInfo(buf), readWavInfo(orig));
    assert.deepEqual(decodeWavMono16k(buf), decodeWavMono16k(orig));
    // Without the pad byte the walk would land one byte off and miss the data chunk.
    assert.equal(readWavInfo(buf).frames, 8000);
  });

  test("a truncated header is refused as truncated", () => {
    const orig = plain();
    for (const n of [12, 30, 44]) refusal(orig.subarray(0, n), /truncated/);
    refusal(orig.subarray(0, 8), /truncated \(8 bytes/);
  });

  test("a data size of 0xFFFFFFFF or 0 (streamed) or past the end uses the whole frames present", () => {
    const orig = plain();
    for (const size of [0xffffffff, 0]) {
      const buf = orig.slice();
      new DataView(buf.buffer).setUint32(40, size, true);
      assert.equal(readWavInfo(buf).frames, 8000);
      assert.deepEqual(decodeWavMono16k(buf), decodeWavMono16k(orig));
    }
    const cut = orig.subarray(0, 44 + 2 * 1000 + 1); // 1000 frames and half of another
    assert.equal(readWavInfo(cut).frames, 1000);
    assert.equal(decodeWavMono16k(cut).length, 1000);
  });

  test("16-bit samples round-trip through toPcm16 to the bytes the encoder wrote", () => {
    const orig = plain();
    assert.deepEqual(new Uint8Array(toPcm16(decodeWavMono16k(orig))), orig.subarray(44));
  });
});

describe("refusals", () => {
  test("other formats are named by their magic", () => {
    const e = refusal(bytes("ID3", [3, 0, 0, 0, 0, 0, 0]), /looks like MP3/);
    assert.equal(e.message, 'the file is not a WAV file (it starts with "ID3", which looks like MP3); send a WAV file (PCM 8 to 32-bit or float)');
    refusal(bytes([0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0]), /bytes FF FB 90 64, which looks like MP3/);
    refusal(bytes("OggS", [0, 2, 0, 0, 0, 0]), /"OggS", which looks like OGG/);
    refusal(bytes("fLaC", [0, 0, 0, 34]), /"fLaC", which looks like FLAC/);
    refusal(bytes([0, 0, 0, 0x20], "ftypM4A ", [0, 0, 0, 0]), /MP4\/M4A/);
    refusal(bytes([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81]), /WebM\/Matroska/);
    refusal(bytes("RF64", [0xff, 0xff, 0xff, 0xff], "WAVE"), /RF64.*not supported/);
    refusal(bytes("RIFF", [4, 0, 0, 0], "AVI "), /type "AVI "/);
    refusal(new Uint8Array(0), /empty/);
  });

  test("a text file renamed .wav is refused as text", () => {
    const p = join(dir, "notes.wav");
    writeFileSync(p, "Meeting notes\nthese are not audio\n");
    const e = refusal(new Uint8Array(readFileSync(p)), /looks like text/);
    assert.match(e.message, /"Meeting notes these are/);
  });

  test("non-PCM formats inside WAV are refused naming the format", () => {
    const mp3 = plain16();
    new DataView(mp3.buffer).setUint16(20, 0x0055, true);
    assert.equal(refusal(mp3, /0x0055/).message, "the WAV fmt chunk says format 0x0055 (MP3 inside WAV); only PCM and IEEE float WAV are accepted");
    refusal(sineWav({rate: 8000, encoding: "a-law", bits: 8, seconds: 0.1, hz: 300}), /format 0x0006 \(A-law\)/);
    const rate = plain16();
    new DataView(rate.buffer).setUint32(24, 400000, true);
    refusal(rate, /sample rate of 400000 Hz/);
    const chans = plain16();
    new DataView(chans.buffer).setUint16(22, 0, true);
    refusal(chans, /0 channels/);
    const bits = plain16();
    new DataView(bits.buffer).setUint16(34, 12, true);
    refusal(bits, /12-bit PCM/);
  });

  function plain16(): Uint8Array {
    return sineWav({rate: 16000, channels: 1, bits: 16, seconds: 0.1, hz: 500});
  }
});

describe("toPcm16", () => {
  test("clamps, rounds and writes little-endian", () => {
    const dv = new DataView(toPcm16(new Float32Array([0, 0.5, -0.5, 1, -1, 2, -2, 1.4 / 32768, 1.6 / 32768, NaN])));
    const got = Array.from({length: dv.byteLength / 2}, (_, i) => dv.getInt16(i * 2, true));
    assert.deepEqual(got, [0, 16384, -16384, 32767, -32768, 32767, -32768, 1, 2, 0]);
  });
});

describe("splitWindows", () => {
  const rate = 16000;
  // 95 s of "speech" (two tones plus a little noise) with silent gaps at known places.
  const gaps = [[27.0, 27.6], [55.5, 56.0], [83.0, 83.5]] as const;
  function signal(seconds: number, silent: ReadonlyArray<readonly [number, number]>): Float32Array {
    const y = new Float32Array(seconds * rate);
    let seed = 1;
    for (let i = 0; i < y.length; i++) {
      const t = i / rate;
      if (silent.some(([a, b]) => t >= a && t < b)) continue;
      seed = (seed * 1103515245 + 12345) >>> 0;
      y[i] = 0.3 * Math.sin(2 * Math.PI * 220 * t) + 0.2 * Math.sin(2 * Math.PI * 1234 * t) + 0.01 * (seed / 2 ** 32 - 0.5);
    }
    return y;
  }
  function assertCover(ws: Array<{start: number; end: number}>, n: number, maxLen: number) {
    assert.equal(ws[0]!.start, 0);
    assert.equal(ws.at(-1)!.end, n);
    for (let i = 0; i < ws.length; i++) {
      assert.ok(ws[i]!.end > ws[i]!.start);
      assert.ok(ws[i]!.end - ws[i]!.start <= maxLen);
      if (i > 0) assert.equal(ws[i]!.start, ws[i - 1]!.end);
    }
  }

  test("95 s with silent gaps: the cuts land in the gaps, windows ≤ 30 s cover every sample", () => {
    const y = signal(95, gaps);
    const ws = splitWindows(y, rate);
    assertCover(ws, y.length, 30 * rate);
    assert.equal(ws.length, 4);
    ws.slice(0, -1).forEach((w, i) => {
      const [a, b] = gaps[i]!;
      assert.ok(w.end > a * rate && w.end < b * rate, `cut ${i} at ${w.end / rate} s, gap ${a}-${b}`);
    });
    // A long silent gap is cut near its middle, not at its edge.
    assert.ok(Math.abs(ws[0]!.end / rate - 27.3) < 0.05);
  });

  test("two silences in the second half: the first one is cut, whatever loud frames came before either", () => {
    // Loud speech right before the first silence, soft speech before the second: with a running sum, the loud frames
    // left a rounding residue in the first silence's sum, and the second (exactly 0) won.
    const y = signal(45, [[18.7, 22.7], [26.0, 26.6]]);
    for (let i = Math.round(17 * rate); i < Math.round(18.7 * rate); i++) y[i] = y[i]! * 3.1;
    for (let i = Math.round(22.7 * rate); i < Math.round(26 * rate); i++) y[i] = y[i]! * 1e-3;
    const ws = splitWindows(y, rate);
    assert.ok(ws[0]!.end > 18.7 * rate && ws[0]!.end < 22.7 * rate, `cut at ${ws[0]!.end / rate} s`);
    assert.ok(Math.abs(ws[0]!.end / rate - 20.7) < 0.05, "in the middle of the first silence");
  });

  test("without quiet places the cuts still hold the limit and cover everything", () => {
    const y = signal(95, []);
    const ws = splitWindows(y, rate);
    assertCover(ws, y.length, 30 * rate);
    // The cut is searched in the second half of the window, so no window but the last is shorter than half.
    for (const w of ws.slice(0, -1)) assert.ok(w.end - w.start >= 15 * rate);
  });

  test("a recording of at most maxS is one window; maxS and rate are honoured", () => {
    assert.deepEqual(splitWindows(new Float32Array(30 * rate), rate), [{start: 0, end: 30 * rate}]);
    assert.deepEqual(splitWindows(new Float32Array(10), rate), [{start: 0, end: 10}]);
    assert.deepEqual(splitWindows(new Float32Array(0), rate), [{start: 0, end: 0}]);
    const y = signal(40, [[7.2, 7.5]]);
    const ws = splitWindows(y, rate, 8);
    assertCover(ws, y.length, 8 * rate);
    assert.ok(ws[0]!.end > 7.2 * rate && ws[0]!.end < 7.5 * rate);
    const y8 = signal(80, []).filter((_, i) => i % 2 === 0); // 80 s at 8 kHz
    assertCover(splitWindows(y8, 8000), y8.length, 30 * 8000);
  });
});
