// The speech-to-text side model (`nx3-asr-0.6b`, `nx3-asr-1.7b`): whisper.cpp in its own process
// (whisper-engine.ts). A recording is cut into windows of at most 30 s at quiet points (Whisper reads 30 s
// at a time); each window is one pass of the side executor, so other side requests and the main model's
// pacing interleave between windows, and each window gets the text before it as context, as whisper.cpp
// does within one call.

import type {SideModelDef} from "../registry.ts";
import type {SideModelContext, SideRunner} from "../side-models.ts";
import {resolveSpeechModel, DEFAULT_SPEECH_NAME, DEFAULT_SPEECH_SPEC} from "./model-source.ts";
import {splitWindows, TARGET_RATE} from "../../media/wav.ts";
import {WhisperEngine, type WindowResult} from "./whisper-engine.ts";

/** Whisper's window. */
export const WINDOW_S = 30;
/** Context carried into the next window: whisper.cpp keeps up to half its 448-token text context; ~200 characters is well inside. */
const CARRY_CHARS = 224;

export interface TranscriptSegment {
  id: number;
  /** Start of the window the segment came from, in 10 ms frames (OpenAI's `seek`). */
  seek: number;
  start: number;
  end: number;
  text: string;
}

export interface Transcript {
  text: string;
  /** Whisper code of the language spoken (the one asked for, or the one detected in the first window). */
  language: string | null;
  durationS: number;
  segments: TranscriptSegment[];
  windows: number;
}

export interface TranscribeOptions {
  /** A Whisper code, or null to detect. */
  language: string | null;
  prompt: string;
  signal?: AbortSignal;
}

export class SpeechRunner implements SideRunner {
  readonly kind = "speech" as const;

  private constructor(readonly id: string, readonly path: string, private readonly source: string, private readonly origin: string,
    private readonly engine: WhisperEngine, private readonly ctx: SideModelContext) {}

  static async load(def: SideModelDef, ctx: SideModelContext): Promise<SpeechRunner> {
    const file = await resolveSpeechModel(def.id, def.source, {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress});
    const engine = new WhisperEngine({id: def.id, modelPath: file.path, logger: ctx.logger, children: ctx.children, waitMs: ctx.queueTimeoutMs});
    await engine.start();
    return new SpeechRunner(def.id, file.path, def.source, file.origin, engine, ctx);
  }

  describe(): Record<string, unknown> {
    return {
      engine: "whisper.cpp (@napi-rs/whisper) in its own process",
      model: this.source === DEFAULT_SPEECH_SPEC ? DEFAULT_SPEECH_NAME : this.source,
      file: this.path,
      origin: this.origin,
      audio: "WAV (PCM 8 to 32-bit or float, any rate, any channels)",
      window_s: WINDOW_S,
    };
  }

  /** Mono 16 kHz samples → text, window by window, one executor pass each. */
  async transcribe(samples: Float32Array, opts: TranscribeOptions): Promise<Transcript> {
    const windows = splitWindows(samples, TARGET_RATE, WINDOW_S);
    const segments: TranscriptSegment[] = [];
    const texts: string[] = [];
    let language = opts.language;
    for (const [i, w] of windows.entries()) {
      const carried = texts.join(" ").slice(-CARRY_CHARS);
      const prompt = [opts.prompt, carried].filter(Boolean).join(" ");
      // A restarting engine is waited for here, before the executor, so other side models' passes are not held behind it.
      await this.engine.whenReady(opts.signal);
      // One thread while the main model decodes: ggml's threads spin at every op's barrier, and the two engines
      // run at once in two processes. Measured on 2 cores (bench:speech, 60 s clip beside 200-token chats):
      // with 1 whisper thread chat decode fell to 0.35x and the transcription ran at RTF 2.5; with 2, to 0.03x
      // and RTF 4.3 (alone: RTF 0.28). Taking turns for real needs the main engine to yield too (closing note).
      const r: WindowResult = await this.ctx.executor.run(() => this.engine.transcribe({
        samples: samples.subarray(w.start, w.end), language: language ?? "auto", prompt,
        threads: this.ctx.executor.mainIsBusy() ? 1 : this.ctx.threads,
      }, opts.signal), opts.signal, {unbounded: i > 0});
      // The first window decides the language for the rest, so a recording does not switch mid-way.
      language ??= r.language;
      const offset = w.start / TARGET_RATE;
      for (const s of r.segments) {
        if (s.text === "" || NON_SPEECH.test(s.text)) continue;
        segments.push({id: segments.length, seek: Math.round(offset * 100), start: round(offset + s.start), end: round(offset + s.end), text: s.text});
      }
      const text = r.segments.length ? r.segments.map((s) => s.text).filter((t) => t !== "" && !NON_SPEECH.test(t)).join(" ") : r.text;
      if (text) texts.push(text);
    }
    return {text: texts.join(" "), language, durationS: samples.length / TARGET_RATE, segments, windows: windows.length};
  }

  async close(): Promise<void> {
    await this.engine.close();
  }
}

const round = (s: number) => Math.round(s * 100) / 100;

/** whisper.cpp's markers for a window without speech ("[BLANK_AUDIO]", "(silence)"): not words the speaker said. */
const NON_SPEECH = /^\s*[[(][^\])]*[\])]\s*$/;

export const createSpeechRunner = (def: SideModelDef, ctx: SideModelContext): Promise<SpeechRunner> => SpeechRunner.load(def, ctx);
