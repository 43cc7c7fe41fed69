// Speech to text: POST /v1/audio/transcriptions (nx3-asr-0.6b, whisper.cpp running Whisper base in a child
// process) on a 60 s spoken clip made at bench time with espeak-ng (the npm build, through support/speech-audio.ts),
// and what it does to a chat stream beside it.
//
//   npm run bench:speech        (BENCH_QUICK=1 for one round of each; BENCH_CLIP_S=20 for a shorter clip while developing;
//                                BENCH_RUNS, BENCH_CHATS_ALONE, BENCH_SPEECH_ROUNDS override the counts, 3 each by default)
//
// Measured, against one server started like `npm start` (default main model, SVC_NPU_MODELS=nx3-asr-0.6b,
// UV_THREADPOOL_SIZE=1, threads left at the server's default):
//   1. the clip transcribed N times alone: wall seconds per request (client side: upload, WAV decode and every
//      window), real-time factor = those seconds / audio seconds (p50), the windows (executor passes) a request
//      took, and the word error rate of the transcript against the text espeak-ng spoke, so the figure is known
//      to be a real transcript;
//   2. a streamed chat completion's decode rate (the server's `timings.predicted_per_second`; max_tokens 200,
//      greedy; the prompt asks for a long answer) alone and while a transcription of the clip runs (transcriptions are started back to
//      back, chats run back to back beside them; a round ends with its first transcription and counts the chats
//      that ended inside it), in interleaved rounds, and their ratio; and that transcription's RTF, i.e. the
//      RTF while chat ran.
// Each ≤30 s window is one pass of the side executor; while the main model generates, each pass is followed
// by a pause as long as the pass but at most 1 s, small beside a window's pass of several seconds: what slows
// each side is mostly the two processes (server and whisper.cpp) sharing the same cores.
// The token counts are printed, so a chat that stopped early shows.

import {mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {availableParallelism, cpus, tmpdir} from "node:os";
import {join} from "node:path";
import {startServer, type RunningServer} from "../support/server.ts";
import {concat, duration, encodeWav, fit, frames, resample, speak, type Audio} from "../support/speech-audio.ts";
import {wordErrorRate} from "../support/word-error-rate.ts";
import {median, streamChat, type ChatBody} from "./llama-server/client.ts";

const MODEL = "nx3-asr-0.6b";
const QUICK = process.env.BENCH_QUICK === "1";
/** Transcriptions of the clip alone; chats alone; rounds of chats beside one transcription of the clip. */
const RUNS = Number(process.env.BENCH_RUNS ?? (QUICK ? 1 : 3));
const CHATS_ALONE = Number(process.env.BENCH_CHATS_ALONE ?? (QUICK ? 1 : 3));
const SPEECH_ROUNDS = Number(process.env.BENCH_SPEECH_ROUNDS ?? (QUICK ? 1 : 3));
const CLIP_S = Number(process.env.BENCH_CLIP_S ?? 60);
const RATE = 16000;
const say = (line: string) => process.stderr.write(`${line}\n`);

/** Plain sentences without numbers, names or abbreviations, so the spoken words have one spelling. */
const SENTENCES = [
  "The morning train left the station a little after the sun came up over the hills.",
  "Most of the passengers were reading quietly or looking out at the fields.",
  "A small child near the window counted the cows and the horses as they went by.",
  "Her father was writing a long letter to a friend who lived by the sea.",
  "The old conductor walked slowly down the aisle and checked every ticket with care.",
  "Outside the weather changed from bright and clear to grey and cold.",
  "Soon a light rain began to fall on the roofs of the houses in the valley.",
  "The river beside the track grew wider as the train moved toward the coast.",
  "In the dining car a cook was making fresh bread and a pot of strong coffee.",
  "People began to talk about their plans for the day and the places they wanted to see.",
  "A young woman with a heavy bag asked whether the next stop was the harbour.",
  "The conductor smiled and told her that she still had a long way to go.",
  "She thanked him and sat down to read a book about the history of ships.",
  "When the clouds opened again the whole valley was shining in the light.",
  "The child pressed her face against the glass and laughed at a flock of birds.",
  "Her father folded the letter and put it carefully in his coat pocket.",
  "At last the train slowed down and came to a gentle stop beside the water.",
  "Everyone stood up, gathered their things and stepped out into the fresh salty air.",
  "The fishermen on the pier were already pulling their boats onto the sand.",
  "It was going to be a long and happy day by the sea for all of them.",
  "Later that evening the family walked along the beach and watched the waves roll in.",
  "The lights of the town came on one by one as the sky turned dark blue.",
  "They bought warm soup from a small shop and ate it sitting on the stone wall.",
  "Before going to sleep the child wrote down everything she had seen that day.",
];

interface Clip {
  path: string;
  audio: Audio;
  bytes: Buffer;
  seconds: number;
  /** The sentences spoken, in order (the reference for the word error rate). */
  text: string;
  speechS: number;
}

/** Speaks sentences one by one, keeps as many as fit in the clip, joins them and pads with silence to exactly CLIP_S seconds at 16 kHz mono 16-bit. */
async function makeClip(dir: string): Promise<Clip> {
  const parts: Audio[] = [];
  const spoken: string[] = [];
  let total = 0;
  for (let i = 0; ; i++) {
    const sentence = SENTENCES[i % SENTENCES.length]!;
    const speech = await speak(sentence, {voice: "en-us", wpm: 150});
    const s = duration(speech);
    if (total + s > CLIP_S - 0.5) break;
    // Each sentence is resampled on its own: one call per sentence stays within what the resampler takes at once.
    parts.push(await resample(speech, RATE));
    spoken.push(sentence);
    total += s;
  }
  const audio = fit(concat(...parts), CLIP_S);
  if (frames(audio) !== CLIP_S * RATE) throw new Error(`clip has ${frames(audio)} samples, not ${CLIP_S * RATE}`);
  const path = join(dir, "clip.wav");
  const bytes = Buffer.from(encodeWav(audio, {bits: 16}));
  writeFileSync(path, bytes);
  return {path, audio, bytes, seconds: frames(audio) / RATE, text: spoken.join(" "), speechS: total};
}

const wer = wordErrorRate;

interface Transcription {
  start: number;
  end: number;
  wallS: number;
  text: string;
  duration: number;
  segments: number;
}

async function transcribe(server: RunningServer, clip: Clip): Promise<Transcription> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(clip.bytes)], {type: "audio/wav"}), "clip.wav");
  form.append("model", MODEL);
  form.append("language", "en");
  form.append("response_format", "verbose_json");
  const start = performance.now();
  const res = await fetch(`${server.url}/v1/audio/transcriptions`, {method: "POST", body: form, signal: AbortSignal.timeout(600_000)});
  if (!res.ok) throw new Error(`transcription: HTTP ${res.status}: ${await res.text()}`);
  const j = (await res.json()) as {text: string; duration: number; segments: unknown[]};
  const end = performance.now();
  return {start, end, wallS: (end - start) / 1000, text: j.text, duration: j.duration, segments: j.segments.length};
}

async function health(server: RunningServer): Promise<any> {
  return (await fetch(`${server.url}/health`)).json();
}

/** Transcriptions back to back until stop() is called; stop() waits for the one under way. */
function transcriptionLoop(server: RunningServer, clip: Clip): {done: Transcription[]; failed: () => boolean; stop: () => Promise<void>} {
  const done: Transcription[] = [];
  let running = true;
  let error: unknown;
  const loop = (async () => {
    while (running) done.push(await transcribe(server, clip));
  })().catch((e: unknown) => void (error = e));
  return {done, failed: () => error !== undefined, stop: async () => {
    running = false;
    await loop;
    if (error !== undefined) throw error;
  }};
}

/** Waits until the side executor is running a pass (so a chat started next overlaps speech from its first token). */
async function executorRunning(server: RunningServer): Promise<void> {
  for (let t = 0; t < 200; t++) {
    if ((await health(server)).side_models?.running) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  say("the side executor did not report a running pass within 5 s; measuring anyway");
}

const CHAT: ChatBody & {temperature: number} = {
  messages: [{role: "system", content: "You are a helpful assistant. Answer the user's request in full."},
    {role: "user", content: "Write a long story about a lighthouse keeper who finds a map, with many chapters."}],
  max_tokens: 200, temperature: 0,
};

async function chat(server: RunningServer): Promise<{tps: number; n: number; start: number; end: number}> {
  const s = await streamChat(server.url, CHAT);
  return {tps: s.serverDecodeTps, n: s.n, start: s.start, end: s.last};
}

const p50 = median;
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-speech-"));
  let server: RunningServer | undefined;
  try {
    const clip = await makeClip(dir);
    writeFileSync(join(dir, "clip.txt"), clip.text);
    server = await startServer({SVC_NPU_MODELS: MODEL, SVC_CTX_SIZE: "2048"});
    const h = await health(server);
    const cpu = cpus()[0]?.model.trim() ?? "unknown CPU";
    console.log(`speech bench: POST /v1/audio/transcriptions (${MODEL} = whisper.cpp, Whisper base, own process) and a chat stream beside it`);
    console.log(`machine: ${cpu}, ${availableParallelism()} cores; server threads ${h.engine?.threads} (decode ${h.engine?.decode_threads}), ` +
      `UV_THREADPOOL_SIZE=1, main model ${h.model?.id}`);
    console.log(`clip: espeak-ng (npm build) en-us 150 wpm, ${clip.seconds.toFixed(1)} s at ${RATE} Hz mono 16-bit ` +
      `(${clip.speechS.toFixed(1)} s speech, ` +
      `${clip.text.split(/\s+/).filter(Boolean).length} words, then silence); ${RUNS} transcription(s) alone, ${CHATS_ALONE} chat(s) alone, ${SPEECH_ROUNDS} transcription(s) with chats beside; language=en, response_format=verbose_json`);
    console.log("");

    // Warm-up: the speech engine's first window (on the clip's first 5 s) and the main model's first request.
    await transcribe(server, {...clip, bytes: Buffer.from(encodeWav(fit(clip.audio, 5), {bits: 16}))});
    await chat(server);

    // 1. alone
    const solo: Transcription[] = [];
    const windows: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const before = (await health(server)).side_models?.passes as number;
      solo.push(await transcribe(server, clip));
      windows.push(((await health(server)).side_models?.passes as number) - before);
      say(`transcription ${r + 1}/${RUNS}: ${solo.at(-1)!.wallS.toFixed(2)} s`);
    }
    const soloWall = p50(solo.map((t) => t.wallS));
    const soloRtf = soloWall / clip.seconds;
    const wers = solo.map((t) => wer(clip.text, t.text));
    console.log("| 1. transcription alone | wall s | RTF | windows (executor passes) | segments | WER |");
    console.log("|---|---|---|---|---|---|");
    for (const [i, t] of solo.entries()) {
      console.log(`| run ${i + 1} | ${f(t.wallS)} | ${f(t.wallS / clip.seconds, 3)} | ${windows[i]} | ${t.segments} | ${f(wers[i]! * 100, 1)}% |`);
    }
    console.log("");
    console.log(`reference:  ${clip.text.slice(0, 160)}…`);
    console.log(`transcript: ${solo[0]!.text.slice(0, 160)}…`);
    console.log("");

    // 2. chat alone, and chats back to back beside a transcription of the clip, in interleaved rounds (alone
    // first in even rounds). A round with speech ends when its transcription does; only chats that ended
    // inside it count, so every counted chat ran against speech throughout and the transcription ran against
    // chat (almost) throughout.
    type Chat = Awaited<ReturnType<typeof chat>>;
    const alone: Chat[] = [];
    const shared: Chat[][] = [];
    const covered: Transcription[] = [];
    const coverage: number[] = [];
    for (let r = 0; r < Math.max(CHATS_ALONE, SPEECH_ROUNDS); r++) {
      const withSpeech = async () => {
        const loop = transcriptionLoop(server!, clip);
        await executorRunning(server!);
        const chats: Chat[] = [];
        let failed: unknown;
        const chatting = (async () => {
          while (loop.done.length === 0 && !loop.failed()) chats.push(await chat(server!));
        })().catch((e: unknown) => void (failed = e));
        // The loop keeps transcriptions back to back; the round ends with the first one.
        while (loop.done.length === 0 && !loop.failed() && failed === undefined) await new Promise((res) => setTimeout(res, 100));
        await loop.stop();
        await chatting;
        if (failed !== undefined) throw failed;
        const t = loop.done[0]!;
        const inside = chats.filter((c) => c.end <= t.end);
        shared.push(inside);
        covered.push(t);
        const busy = chats.reduce((a, c) => a + Math.max(0, Math.min(t.end, c.end) - Math.max(t.start, c.start)), 0);
        coverage.push(busy / (t.end - t.start));
        say(`with speech ${r + 1}/${SPEECH_ROUNDS}: transcription ${t.wallS.toFixed(2)} s; ${inside.length} chats inside it: ` +
          `${inside.map((c) => f(c.tps, 1)).join(", ")} tok/s`);
      };
      const soloChat = async () => {
        const c = await chat(server!);
        alone.push(c);
        say(`chat alone ${r + 1}/${CHATS_ALONE}: ${f(c.tps, 1)} tok/s (${c.n} tokens)`);
      };
      const steps = [...(r < CHATS_ALONE ? [soloChat] : []), ...(r < SPEECH_ROUNDS ? [withSpeech] : [])];
      for (const step of r % 2 ? steps.reverse() : steps) await step();
    }

    const aloneTps = p50(alone.map((c) => c.tps));
    const sharedAll = shared.flat();
    const sharedTps = p50(sharedAll.map((c) => c.tps));
    const coveredRtf = p50(covered.map((t) => t.wallS / clip.seconds));
    console.log(`| 2. chat decode (max_tokens ${CHAT.max_tokens}, greedy, streamed; server timings) | runs (tok/s) | tokens | p50 tok/s |`);
    console.log("|---|---|---|---|");
    console.log(`| alone | ${alone.map((c) => f(c.tps, 1)).join(", ")} | ${alone.map((c) => c.n).join(", ")} | ${f(aloneTps, 1)} |`);
    for (const [i, cs] of shared.entries()) {
      console.log(`| with a transcription running, round ${i + 1} | ${cs.map((c) => f(c.tps, 1)).join(", ") || "-"} | ${cs.map((c) => c.n).join(", ") || "-"} | ${f(p50(cs.map((c) => c.tps)), 1)} |`);
    }
    console.log("");
    console.log("| 2. transcription while chat runs | wall s | RTF | share of its time with a chat running | WER |");
    console.log("|---|---|---|---|---|");
    for (const [i, t] of covered.entries()) {
      console.log(`| round ${i + 1} | ${f(t.wallS)} | ${f(t.wallS / clip.seconds, 3)} | ${f(coverage[i]! * 100, 0)}% | ${f(wer(clip.text, t.text) * 100, 1)}% |`);
    }
    console.log("");

    const rows: [string, string, string][] = [
      ["clip length", "s", f(clip.seconds, 1)],
      ["transcription wall per request, alone (p50)", "s", f(soloWall)],
      ["RTF alone (p50; processing s / audio s)", "x", f(soloRtf, 3)],
      ["windows per request (executor passes)", "", String(p50(windows))],
      ["WER alone (p50)", "%", f(p50(wers) * 100, 1)],
      [`chat decode alone (p50 of ${alone.length})`, "tok/s", f(aloneTps, 1)],
      [`chat decode with a transcription running (p50 of ${sharedAll.length})`, "tok/s", f(sharedTps, 1)],
      ["chat decode ratio with / alone", "x", f(sharedTps / aloneTps, 2)],
      [`RTF while chat ran (p50 of ${covered.length}; chat running ${f(p50(coverage) * 100, 0)}% of the time)`, "x", f(coveredRtf, 3)],
      ["RTF while chat ran / alone", "x", f(coveredRtf / soloRtf, 2)],
      ["WER while chat ran (p50)", "%", f(p50(covered.map((t) => wer(clip.text, t.text))) * 100, 1)],
    ];
    console.log("| summary | unit | value |");
    console.log("|---|---|---|");
    for (const [label, unit, value] of rows) console.log(`| ${label} | ${unit} | ${value} |`);
  } catch (err) {
    if (server) say(`--- last server lines:\n${server.logs.slice(-25).join("\n")}`);
    throw err;
  } finally {
    await server?.stop();
    rmSync(dir, {recursive: true, force: true});
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
