// The speech engine's own process: whisper.cpp through @napi-rs/whisper. It runs apart from the server
// for three reasons: the binding's `full()` is synchronous (in the server it would stop every other
// request for the length of a window), its prebuilt binary is compiled for the build machine's CPU (an
// instruction this CPU lacks kills only this process, which the parent reports), and it keeps off the one
// libuv worker the main model decodes on.
//
// Protocol (process.send with advanced serialization, so Float32Array crosses without JSON):
//   parent → child: {type: "transcribe", id, samples, language, prompt, threads}; {type: "ping", seq} (the supervisor's idle check)
//   child → parent: {type: "ready", info} once; {type: "done", id, text, segments, language} or {type: "failed", id, message};
//   {type: "pong", seq}

import {Whisper, WhisperFullParams, WhisperSamplingStrategy, type Segment} from "@napi-rs/whisper";

export interface TranscribeJob {
  type: "transcribe";
  id: number;
  /** Mono 16 kHz samples in [-1, 1]. */
  samples: Float32Array;
  /** A whisper language code, or "auto". */
  language: string;
  prompt: string;
  threads: number;
}

export interface ChildSegment {
  text: string;
  /** Seconds from the start of the samples sent. */
  start: number;
  end: number;
}

export type ChildMessage =
  | {type: "ready"; info: {multilingual: boolean; layers: number; vocab: number}}
  | {type: "done"; id: number; text: string; segments: ChildSegment[]; language: string | null}
  | {type: "failed"; id: number; message: string}
  | {type: "pong"; seq: number};

export type ParentMessage = TranscribeJob | {type: "ping"; seq: number};

const send = (m: ChildMessage) => process.send?.(m);

function main(): void {
  const modelPath = process.argv[2];
  if (!modelPath || !process.send) {
    process.stderr.write("whisper-child: run by the server with a model path\n");
    process.exit(2);
  }
  // whisper.cpp logs every load and window to stderr; the parent keeps the last lines for its error
  // messages. (The binding's setupLogger would route them here, but in 0.0.4 it panics on the first line.)
  let whisper: Whisper;
  try {
    whisper = new Whisper(modelPath, {useGpu: false});
  } catch (e) {
    // One line, last on stderr: the parent's error message quotes it (an uncaught error's stack would end in noise).
    process.stderr.write(`whisper-child: could not load the model: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  send({type: "ready", info: {multilingual: whisper.isMultilingual === 1, layers: whisper.modelNAudioLayer, vocab: whisper.modelNVocab}});
  process.on("message", (m: ParentMessage) => {
    if (m?.type === "ping") send({type: "pong", seq: m.seq});
    if (m?.type !== "transcribe") return;
    transcribe(whisper, m).then((r) => send({type: "done", id: m.id, ...r}),
      (e: unknown) => send({type: "failed", id: m.id, message: e instanceof Error ? e.message : String(e)}));
  });
  process.on("disconnect", () => process.exit(0));
}

async function transcribe(whisper: Whisper, job: TranscribeJob): Promise<{text: string; segments: ChildSegment[]; language: string | null}> {
  const p = new WhisperFullParams(WhisperSamplingStrategy.Greedy);
  p.nThreads = job.threads;
  p.language = job.language;
  p.temperature = 0;
  p.translate = false;
  p.printProgress = false;
  p.printRealtime = false;
  p.printTimestamps = false;
  p.printSpecial = false;
  if (job.prompt) p.initialPrompt = job.prompt;
  const segments: ChildSegment[] = [];
  let language: string | null = null;
  p.onEncoderBegin = (state) => {
    language = Whisper.lang(state.fullLangId);
  };
  p.onNewSegment = (s: Segment) => {
    // whisper.cpp's segment times are in 10 ms steps.
    segments.push({text: s.text.trim(), start: s.start / 100, end: s.end / 100});
  };
  const joined = whisper.full(p, job.samples);
  // The callbacks are queued to this thread while full() runs and delivered once it returns: let them in.
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  // The runner builds the text from the segments (full() glues them without a space, "dog.Speech");
  // full()'s own text is kept for a window whose segments did not arrive.
  return {text: joined.trim(), segments, language};
}

main();
