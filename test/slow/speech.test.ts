// POST /v1/audio/transcriptions on a real Whisper (base): two of the WAV layouts users send (telephone-band 8 kHz
// and 44.1 kHz float, each against an independent conversion of the same file), the official openai client, the
// response formats, languages, the route's counters, every refusal at its edge, and the engine's process killed
// mid-request (503, restarted by its supervisor, the next request served). The other layouts and a
// recording longer than one 30 s window are in test/slow/speech-layouts.test.ts (each transcription is seconds of
// Whisper on 2 cores). This file is in the slow tier: its transcriptions took 85-92 s of npm test's 8 minutes. What
// is shared, and how the speech is made: test/e2e/speech-fixture.ts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {toFile} from "openai";
import {get} from "../../support/server.ts";
import {wordErrorRate} from "../../support/word-error-rate.ts";
import {MODEL, refused, SENTENCES, speech, startSpeech, transcribe, WER_BOUND, layoutTests} from "../e2e/speech-fixture.ts";

/** The layouts this tier checks; test/slow/speech-layouts.test.ts checks the rest. */
const E2E_LAYOUTS = ["8 kHz 16-bit mono", "44.1 kHz 32-bit float mono"];

before(startSpeech);
after(async () => {
  await speech.server?.stop();
});

describe("speech to text", {concurrency: 1}, () => {
  const reference = SENTENCES.join(" ");
  layoutTests(E2E_LAYOUTS);

  test("the official openai client: transcriptions.create with json, text and verbose_json", async () => {
    const file = await toFile(speech.wav, "speech.wav", {type: "audio/wav"});
    const json = await speech.server.client.audio.transcriptions.create({file, model: "whisper-1"});
    assert.ok(wordErrorRate(reference, json.text) <= WER_BOUND, json.text);
    const text = await speech.server.client.audio.transcriptions.create({file: await toFile(speech.wav, "speech.wav"), model: MODEL,
      response_format: "text", language: "en"});
    assert.equal(typeof text, "string");
    assert.ok(wordErrorRate(reference, text) <= WER_BOUND, text);
    const verbose = await speech.server.client.audio.transcriptions.create({file: await toFile(speech.wav, "speech.wav"), model: "whisper-1",
      response_format: "verbose_json", timestamp_granularities: ["segment"]});
    assert.equal(verbose.language, "english");
    assert.ok(verbose.duration > 10 && verbose.duration < 25, `duration ${verbose.duration}`);
    assert.ok(verbose.segments && verbose.segments.length >= 2, "a segment per phrase");
    let last = 0;
    for (const s of verbose.segments!) {
      assert.ok(s.start >= last - 1e-9 && s.end > s.start && s.end <= verbose.duration + 0.5, `segment times ${s.start}..${s.end}`);
      last = s.end;
    }
    assert.equal(verbose.segments!.map((s) => s.text).join(" "), verbose.text);
  });

  test("srt and vtt carry the segments with their times", async () => {
    const srt = await transcribe(speech.wav, {response_format: "srt"});
    assert.equal(srt.status, 200);
    assert.match(srt.text, /^1\n00:00:0\d,\d{3} --> 00:00:\d\d,\d{3}\n\S/);
    const vtt = await transcribe(speech.wav, {response_format: "vtt"});
    assert.equal(vtt.status, 200);
    assert.match(vtt.text, /^WEBVTT\n\n00:00:0\d\.\d{3} --> 00:00:\d\d\.\d{3}\n\S/);
  });

  test("language by name and by code; a prompt is accepted", async () => {
    const a = await transcribe(speech.wav, {language: "english", response_format: "verbose_json"});
    const b = await transcribe(speech.wav, {language: "EN", prompt: "Stella, store, breeze.", response_format: "verbose_json"});
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(a.body.language, "english");
    assert.equal(b.body.language, "english");
    assert.ok(wordErrorRate(reference, a.body.text) <= WER_BOUND, a.body.text);
    assert.ok(wordErrorRate(reference, b.body.text) <= WER_BOUND, b.body.text);
  });

  test("/health, /v1/models and /metrics show the speech model and count transcriptions", async () => {
    const health = (await get(`${speech.server.url}/health`)).body;
    const entry = health.side_models.models.find((m: {id: string}) => m.id === MODEL);
    assert.equal(entry.kind, "speech");
    assert.match(entry.model, /Whisper base/);
    const models = (await get(`${speech.server.url}/v1/models`)).body;
    assert.ok(models.data.some((m: {id: string; kind?: string}) => m.id === MODEL && m.kind === "speech"));
    const metrics = await (await fetch(`${speech.server.url}/metrics`)).text();
    const count = Number(/^svc:transcriptions_total (\d+)/m.exec(metrics)?.[1]);
    const seconds = Number(/^svc:transcribed_audio_seconds_total ([\d.e+]+)/m.exec(metrics)?.[1]);
    assert.ok(count >= E2E_LAYOUTS.length + 3, `transcriptions_total ${count}`);
    assert.ok(seconds > count * 10, `audio seconds ${seconds}`);
  });
});

/** A silent WAV header + data of `seconds` at `rate` Hz, 8-bit mono (128 = silence). */
function silentWav(seconds: number, rate: number): Buffer {
  const frames = Math.round(seconds * rate);
  const out = Buffer.alloc(44 + frames, 128);
  out.write("RIFF", 0);
  out.writeUInt32LE(36 + frames, 4);
  out.write("WAVEfmt ", 8);
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(rate, 24);
  out.writeUInt32LE(rate, 28);
  out.writeUInt16LE(1, 32);
  out.writeUInt16LE(8, 34);
  out.write("data", 36);
  out.writeUInt32LE(frames, 40);
  return out;
}

describe("refusals: 400 naming the field and the rule; the next request is served", {concurrency: 1}, () => {
  test("stream is refused", () => refused(speech.wav, {stream: "true"}, "stream", /not streamed/));
  test("a missing file", async () => {
    const form = new FormData();
    form.set("model", "whisper-1");
    const res = await fetch(`${speech.server.url}/v1/audio/transcriptions`, {method: "POST", body: form});
    const body = await res.json() as any;
    assert.equal(res.status, 400);
    assert.equal(body.error.param, "file");
    assert.match(body.error.message, /required.*WAV/);
  });
  test("a multipart body without a boundary, or cut short, is refused as malformed (found by the contract fuzzer)", async () => {
    for (const [type, body] of [["multipart/form-data", ""],
      ["multipart/form-data; boundary=c561", "--c561\r\n50550--c561--\r\n"]] as const) {
      const res = await fetch(`${speech.server.url}/v1/audio/transcriptions`, {method: "POST", headers: {"content-type": type}, body});
      const b = await res.json() as any;
      assert.equal(res.status, 400, JSON.stringify(b));
      assert.equal(b.error.param, "body");
      assert.match(b.error.message, /not valid multipart\/form-data/);
    }
  });
  test("an unknown response_format", () => refused(speech.wav, {response_format: "mp3"}, "response_format", /json, text, verbose_json, srt, vtt/));
  test("a language that is not one", () => refused(speech.wav, {language: "klingon"}, "language", /not a language/));
  test("MP3, OGG, a text file named .wav and a truncated header are refused naming WAV", async () => {
    const mp3 = Buffer.concat([Buffer.from("ID3\x04\x00\x00\x00\x00\x00\x00", "latin1"), Buffer.alloc(200, 0x55)]);
    await refused(mp3, {}, "file", /WAV.*MP3|MP3.*WAV/);
    await refused(Buffer.concat([Buffer.from("OggS"), Buffer.alloc(200)]), {}, "file", /WAV/);
    await refused(Buffer.from("hello, this is not audio at all\n".repeat(10)), {}, "file", /WAV/);
    await refused(speech.wav.subarray(0, 30), {}, "file", /WAV.*truncated|truncated.*WAV/);
  });
  test("20 min + 1 s is refused naming both limits; exactly 20 min passes the duration check", async () => {
    await refused(silentWav(20 * 60 + 1, 8000), {}, "file", /20 min 1 s.*20 minutes or 25 MiB/);
    // Exactly 20 minutes is accepted: its first window reaches the engine (a pass starts), then the client hangs up.
    const before = (await get(`${speech.server.url}/health`)).body.side_models.passes as number;
    const ac = new AbortController();
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(silentWav(20 * 60, 8000))]), "twenty.wav");
    const pending = fetch(`${speech.server.url}/v1/audio/transcriptions`, {method: "POST", body: form, signal: ac.signal}).then(async (r) => ({status: r.status, text: await r.text()}),
      () => null);
    let started = false;
    for (let i = 0; i < 300 && !started; i++) {
      await new Promise((r) => setTimeout(r, 100));
      started = (await get(`${speech.server.url}/health`)).body.side_models.passes > before;
    }
    ac.abort();
    const early = await pending;
    assert.ok(early === null || early.status !== 400, `exactly 20 min was refused: ${early?.text}`);
    assert.ok(started, "the 20-minute recording reached the engine");
    // The hang-up stops the window in progress instead of leaving the engine busy with it (the next test is served).
    await speech.server.waitForLog(/info child stopped on purpose; restarting child=nx3-asr-0.6b why="its client hung up mid-window"/, 5_000);
  });
  test("over 25 MiB is refused naming both limits", async () => {
    const big = silentWav(0, 8000);
    const over = Buffer.concat([big, Buffer.alloc(25 * 1024 * 1024 + 1 - big.length, 128)]);
    over.writeUInt32LE(over.length - 8, 4);
    over.writeUInt32LE(over.length - 44, 40);
    await refused(over, {}, "file", /25 MiB.*20 minutes or 25 MiB/);
  });
  test("an engine killed with SIGKILL mid-request: 503 naming the speech model with Retry-After, then /health shows it restarted", async () => {
    const health = async () => (await get(`${speech.server.url}/health`)).body;
    const childOf = (h: any) => h.children.find((c: {name: string}) => c.name === MODEL);
    /** /health once the engine is ready (the hang-up above restarted it). */
    const ready = async () => {
      for (let i = 0; i < 600; i++) {
        const h = await health();
        if (childOf(h).state === "ready") return h;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`the speech engine is not ready again: ${JSON.stringify(childOf(await health()))}`);
    };
    const before = await ready();
    const child = childOf(before);
    assert.equal(typeof child.pid, "number");
    const pending = transcribe(speech.wav);
    // The window is in the engine once its executor pass has started.
    for (let i = 0; i < 300 && (await health()).side_models.passes === before.side_models.passes; i++) await new Promise((r) => setTimeout(r, 50));
    process.kill(child.pid, "SIGKILL");
    const r = await pending;
    assert.equal(r.status, 503, r.text);
    assert.equal(r.body.error.code, "model_restarting");
    assert.match(r.body.error.message, /^the speech model nx3-asr-0\.6b stopped while transcribing \(killed by SIGKILL.*\); it is being restarted; retry in \d+ s$/);
    assert.ok(Number(r.headers.get("retry-after")) >= 1, `Retry-After ${r.headers.get("retry-after")}`);
    const after = childOf(await ready());
    assert.notEqual(after.pid, child.pid);
    assert.deepEqual([after.restarts, after.crashes], [child.restarts + 1, child.crashes + 1]);
    assert.match(after.last_exit, /^killed by SIGKILL/);
    const metrics = await (await fetch(`${speech.server.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`^svc:child_restarts_total\\{child="${MODEL}"\\} ${after.restarts}$`, "m"));
  });
  test("after every refusal, the hang-up and the killed engine, the next request is served", async () => {
    const r = await transcribe(speech.wav);
    assert.equal(r.status, 200, r.text);
    assert.ok(wordErrorRate(SENTENCES.join(" "), r.body.text) <= WER_BOUND);
  });
});
