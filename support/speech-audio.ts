// Test audio for the speech tests and the speech benchmark, made from npm packages instead of system tools:
// espeak-ng compiled to JS (@echogarden/espeak-ng-emscripten, GPL-3.0: a devDependency, imported only here, never
// from src/) speaks; @echogarden/wave-codec writes and reads WAV in every layout (8-bit unsigned, 16/24/32-bit
// signed, 32/64-bit float, A-law; WAVE_FORMAT_EXTENSIBLE above 16 bits or 2 channels, as sox does); libsamplerate
// (@alexanderolsen/libsamplerate-js, its C code compiled to wasm) resamples. None of it shares code with the server's
// decoder (src/media/wav.ts), so what the tests send checks that decoder from outside, as sox did.
//
// Audio is held as float channels in [-1, 1]; conversions follow sox's defaults: one channel to many copies it,
// many to one averages them, integer output rounds without dither (sox -D).

import LibSampleRate from "@alexanderolsen/libsamplerate-js";
import {decodeWaveToBuffer, decodeWaveToFloat32Channels, encodeWaveFromFloat32Channels, SampleFormat, type BitDepth} from "@echogarden/wave-codec";

export interface Audio {
  rate: number;
  /** One array per channel, all of the same length. */
  channels: Float32Array[];
}

export type SampleEncoding = "signed" | "unsigned" | "float" | "a-law";

/** A WAV layout, as sox's output options name it (-r, -b, -e, -c); what is left out stays as the input has it. */
export interface Layout {
  rate?: number;
  bits?: 8 | 16 | 24 | 32 | 64;
  encoding?: SampleEncoding;
  channels?: number;
}

export const frames = (a: Audio): number => a.channels[0]?.length ?? 0;
export const duration = (a: Audio): number => frames(a) / a.rate;

// ---- speech -------------------------------------------------------------------------------------------------------

interface EspeakWorker {
  set_voice(name: string): number;
  rate: number;
  synthesize(text: string, onChunk: (samples: Int16Array, events: unknown[]) => boolean): void;
  samplerate: number;
}

let espeak: Promise<EspeakWorker> | undefined;

function worker(): Promise<EspeakWorker> {
  espeak ??= (async () => {
    // The module has no types (hence the name in a variable); its default export instantiates the wasm build, which
    // reads espeak-ng.data from beside it.
    const name = "@echogarden/espeak-ng-emscripten";
    const init = (await import(name)).default as () => Promise<{eSpeakNGWorker: new () => EspeakWorker}>;
    return new (await init()).eSpeakNGWorker();
  })();
  return espeak;
}

export interface SpeakOptions {
  /** espeak-ng voice (-v); default en-us. */
  voice?: string;
  /** Words per minute (-s); default 150. */
  wpm?: number;
  /**
   * A short pause before every word, standing in for the espeak-ng CLI's `-g 4` (this build exposes no word-gap
   * parameter): an SSML weak break between words adjusts the next word's pre-pause without ending the clause. At 150
   * wpm the speech test's three passages come out 18.7, 12.0 and 17.7 s long, against 18.7, 12.0 and 17.6 s from
   * `espeak-ng -v en-us -s 150 -g 4`.
   */
  wordPauses?: boolean;
}

const xmlEscape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Speaks `text` with espeak-ng: mono, 22.05 kHz, 16-bit samples (as `espeak-ng -w` writes them), as floats. */
export async function speak(text: string, opts: SpeakOptions = {}): Promise<Audio> {
  const w = await worker();
  if (w.set_voice(opts.voice ?? "en-us") !== 0) throw new Error(`espeak-ng has no voice ${opts.voice}`);
  w.rate = opts.wpm ?? 150;
  // This build reads its input as SSML, so text is escaped either way.
  const words = text.split(/\s+/).filter(Boolean).map(xmlEscape);
  const input = opts.wordPauses ? words.join(' <break strength="weak"/> ') : words.join(" ");
  const chunks: Int16Array[] = [];
  w.synthesize(input, (samples) => {
    chunks.push(samples);
    return false; // false: go on
  });
  const out = new Float32Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) for (let i = 0; i < c.length; i++) out[at++] = c[i]! / 32768;
  return {rate: w.samplerate, channels: [out]};
}

// ---- signals ------------------------------------------------------------------------------------------------------

/** `amplitude`·sin(2π·hz·t) from t = 0 on every channel (sox's `synth <seconds> sine <hz> vol <amplitude>`). */
export function sine(o: {rate: number; seconds: number; hz: number; amplitude: number; channels?: number}): Audio {
  const y = new Float32Array(Math.round(o.seconds * o.rate));
  for (let i = 0; i < y.length; i++) y[i] = o.amplitude * Math.sin((2 * Math.PI * o.hz * i) / o.rate);
  return {rate: o.rate, channels: Array.from({length: o.channels ?? 1}, () => y.slice())};
}

export function silence(seconds: number, rate: number, channels = 1): Audio {
  return {rate, channels: Array.from({length: channels}, () => new Float32Array(Math.round(seconds * rate)))};
}

/** Joins recordings of the same rate and channel count end to end. */
export function concat(...parts: Audio[]): Audio {
  const first = parts[0]!;
  for (const p of parts) {
    if (p.rate !== first.rate || p.channels.length !== first.channels.length) throw new Error("concat: rates or channel counts differ");
  }
  return {rate: first.rate, channels: first.channels.map((_, c) => {
    const out = new Float32Array(parts.reduce((n, p) => n + frames(p), 0));
    let at = 0;
    for (const p of parts) {
      out.set(p.channels[c]!, at);
      at += frames(p);
    }
    return out;
  })};
}

/** Exactly `seconds` long: cut, or padded with silence (sox's `pad 0 N trim 0 N`). */
export function fit(a: Audio, seconds: number): Audio {
  const n = Math.round(seconds * a.rate);
  return {rate: a.rate, channels: a.channels.map((ch) => {
    const out = new Float32Array(n);
    out.set(ch.subarray(0, n));
    return out;
  })};
}

// ---- conversion ---------------------------------------------------------------------------------------------------

/** sox's channel change: mono to N copies, N to mono by averaging, N to N as is. */
export function remix(a: Audio, channels: number): Audio {
  const n = a.channels.length;
  if (channels === n) return a;
  if (n === 1) return {rate: a.rate, channels: Array.from({length: channels}, () => a.channels[0]!.slice())};
  if (channels === 1) {
    const out = new Float32Array(frames(a));
    for (const ch of a.channels) for (let i = 0; i < out.length; i++) out[i] = out[i]! + ch[i]! / n;
    return {rate: a.rate, channels: [out]};
  }
  throw new Error(`remix: ${n} to ${channels} channels is not a conversion the tests use`);
}

/**
 * The libsamplerate wrapper splits inputs above 4 MB into pieces and then comes out short at the end (143 frames of
 * 60 s were missing when measured), so each call stays under that; callers resample long audio in parts.
 */
const MAX_RESAMPLE_FRAMES = 1_000_000;

/** One converter per pair of rates, kept: loading the wasm module takes most of a second. simple() keeps no state. */
const converters = new Map<string, ReturnType<typeof LibSampleRate.create>>();

/** Resamples every channel with libsamplerate's best sinc converter (145 dB signal to noise on a sine). */
export async function resample(a: Audio, rate: number): Promise<Audio> {
  if (rate === a.rate) return a;
  if (frames(a) > MAX_RESAMPLE_FRAMES) throw new Error(`resample: ${frames(a)} frames; resample at most ${MAX_RESAMPLE_FRAMES} at a time`);
  const key = `${a.rate}>${rate}`;
  if (!converters.has(key)) {
    converters.set(key, LibSampleRate.create(1, a.rate, rate, {converterType: LibSampleRate.ConverterType.SRC_SINC_BEST_QUALITY}));
  }
  const src = await converters.get(key)!;
  return {rate, channels: a.channels.map((ch) => src.simple(ch))};
}

/** Changes channels and rate as `layout` asks (fewer channels first, so there is less to resample). */
export async function convert(a: Audio, layout: Layout): Promise<Audio> {
  const channels = layout.channels ?? a.channels.length;
  if (channels < a.channels.length) return resample(remix(a, channels), layout.rate ?? a.rate);
  return remix(await resample(a, layout.rate ?? a.rate), channels);
}

// ---- WAV ----------------------------------------------------------------------------------------------------------

const FORMATS: Record<SampleEncoding, {format: SampleFormat; bits: number[]}> = {
  // WAV's 8-bit PCM is unsigned, its wider PCM signed: one format code for both.
  signed: {format: SampleFormat.PCM, bits: [16, 24, 32]},
  unsigned: {format: SampleFormat.PCM, bits: [8]},
  float: {format: SampleFormat.Float, bits: [32, 64]},
  "a-law": {format: SampleFormat.Alaw, bits: [8]},
};

/** Writes `a` as a WAV file of the given sample format (default 16-bit signed). */
export function encodeWav(a: Audio, o: {bits?: Layout["bits"]; encoding?: SampleEncoding} = {}): Uint8Array {
  const encoding = o.encoding ?? (o.bits === 8 ? "unsigned" : o.bits === 64 ? "float" : "signed");
  const bits = o.bits ?? (encoding === "float" ? 32 : encoding === "signed" ? 16 : 8);
  const f = FORMATS[encoding];
  if (!f.bits.includes(bits)) throw new Error(`WAV has no ${bits}-bit ${encoding} samples`);
  return encodeWaveFromFloat32Channels(a.channels, a.rate, bits as BitDepth, f.format);
}

/** Converts and writes in one step: what `sox in.wav -r R -b B -e E -c C out.wav` did. */
export async function toWav(a: Audio, layout: Layout = {}): Promise<Uint8Array> {
  return encodeWav(await convert(a, layout), layout);
}

export interface WavFile {
  audio: Audio;
  bits: number;
  /** The format code after resolving an extensible header's sub-format GUID (1 PCM, 3 float, 6 A-law, 7 µ-law). */
  format: number;
}

/** Reads a WAV file with wave-codec: the independent reader the tests hold the server's decoder against. */
export function decodeWav(bytes: Uint8Array): WavFile {
  const header = decodeWaveToBuffer(bytes);
  const {audioChannels, sampleRate} = decodeWaveToFloat32Channels(bytes);
  return {audio: {rate: sampleRate, channels: audioChannels}, bits: header.bitDepth, format: header.sampleFormat};
}
