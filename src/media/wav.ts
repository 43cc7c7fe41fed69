// WAV in, mono 16 kHz out: what the whisper binding eats. We only read the header we need (RIFF/WAVE,
// fmt, data; every other chunk is skipped), decode PCM 8/16/24/32-bit and IEEE float 32/64, average the
// channels and resample with a windowed-sinc polyphase filter. Anything else is refused with a WavError that
// says what the file looks like, because "bad audio" alone leaves the caller guessing.

export class WavError extends Error {
  override name = "WavError";
}

export interface WavInfo {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
  format: "pcm" | "float";
  frames: number;
  durationS: number;
}

export const TARGET_RATE = 16000;
const SEND = "send a WAV file (PCM 8 to 32-bit or float)";
const MAX_RATE = 384000;
const MAX_CHANNELS = 32;
// fmt tags seen in the wild inside RIFF/WAVE, named so the refusal tells the caller what they sent.
const FORMAT_NAMES: Record<number, string> = {
  0x0002: "Microsoft ADPCM", 0x0006: "A-law", 0x0007: "mu-law", 0x0011: "IMA ADPCM", 0x0031: "GSM 6.10",
  0x0050: "MPEG audio", 0x0055: "MP3 inside WAV", 0x00ff: "AAC", 0x0161: "WMA", 0x2000: "AC-3",
};
// The 14 bytes that follow the format code in a KSDATAFORMAT_SUBTYPE_* GUID (PCM, IEEE_FLOAT, ...).
const GUID_TAIL = [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n));
const hex = (n: number) => "0x" + n.toString(16).toUpperCase().padStart(4, "0");

/** Why a buffer that is not RIFF/WAVE was refused: names the format its magic bytes suggest. */
function notWav(b: Uint8Array): WavError {
  if (b.length === 0) return new WavError(`the file is empty (0 bytes), not a WAV file; ${SEND}`);
  const head = ascii(b, 0, 4);
  let what: string | undefined;
  if (head.startsWith("ID3")) what = "MP3";
  else if (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) what = (b[1]! & 0xf6) === 0xf0 ? "AAC (ADTS)" : "MP3";
  else if (head === "OggS") what = "OGG (Vorbis or Opus)";
  else if (head === "fLaC") what = "FLAC";
  else if (b.length >= 8 && ascii(b, 4, 4) === "ftyp") what = "MP4/M4A";
  else if (b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) what = "WebM/Matroska";
  else if (head === "FORM") what = "AIFF";
  else if (head === "caff") what = "Core Audio (CAF)";
  else if (head === "#!AM") what = "AMR";
  const n = what === "MP4/M4A" ? 8 : head.startsWith("ID3") ? 3 : Math.min(4, b.length);
  const start = b.subarray(0, n);
  const printable = start.every((c) => c >= 0x20 && c < 0x7f);
  const shown = printable ? JSON.stringify(ascii(b, 0, n)) : "bytes " + [...start].map((c) => c.toString(16).toUpperCase().padStart(2, "0")).join(" ");
  if (!what && looksLikeText(b)) {
    const text = new TextDecoder().decode(b.subarray(0, 24)).replace(/\s+/g, " ");
    return new WavError(`the file is not a WAV file (it starts with ${JSON.stringify(text)}, which looks like text); ${SEND}`);
  }
  return new WavError(`the file is not a WAV file (it starts with ${shown}${what ? `, which looks like ${what}` : ""}); ${SEND}`);
}

/** No control bytes besides tab/CR/LF in the first 512 bytes; bytes ≥ 0x80 pass (UTF-8 text). */
function looksLikeText(b: Uint8Array): boolean {
  const n = Math.min(b.length, 512);
  for (let i = 0; i < n; i++) {
    const c = b[i]!;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f) return false;
  }
  return true;
}

const truncated = (b: Uint8Array) =>
  new WavError(`the WAV header is truncated (${b.length} bytes; a WAV needs RIFF, a fmt chunk and a data chunk)`);

type Layout = WavInfo & {dataOffset: number};

/** Walks the chunks up to `data`; returns the format plus where the samples start. */
function parse(b: Uint8Array): Layout {
  const magic = ascii(b, 0, 4);
  if (magic === "RF64" || magic === "BW64") {
    throw new WavError(`the file is ${magic} (64-bit WAV for files over 4 GB), which is not supported; ${SEND} under 4 GB`);
  }
  if (magic === "RIFX") throw new WavError(`the file is a big-endian WAV (RIFX), which is not supported; ${SEND}`);
  if (magic !== "RIFF") throw notWav(b);
  if (b.length < 12) throw truncated(b);
  const type = ascii(b, 8, 4);
  if (type !== "WAVE") {
    throw new WavError(`the file is a RIFF file of type ${JSON.stringify(type)}, not a WAV file (RIFF type "WAVE"); ${SEND}`);
  }
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let fmt: Omit<WavInfo, "frames" | "durationS"> | undefined;
  let off = 12;
  while (off + 8 <= b.length) {
    const id = ascii(b, off, 4);
    const size = dv.getUint32(off + 4, true);
    const body = off + 8;
    if (id === "fmt ") {
      if (body + Math.min(size, 40) > b.length) throw truncated(b);
      fmt = readFmt(dv, body, size);
    } else if (id === "data") {
      if (!fmt) throw new WavError("the WAV data chunk comes before any fmt chunk, so its samples cannot be read");
      const frameBytes = fmt.channels * (fmt.bitsPerSample / 8);
      const present = b.length - body;
      // Recorders that stream (pipes, crashed writers) leave 0 or 0xFFFFFFFF here: trust the bytes present.
      const bytes = size === 0 || size > present ? present : size;
      const frames = Math.floor(bytes / frameBytes);
      if (frames === 0) {
        if (size === 0 && present === 0) throw new WavError("the WAV data chunk is empty (0 bytes of audio)");
        throw new WavError(`the WAV file is truncated (${b.length} bytes; the data chunk declares ${size} bytes ` +
          `but not one whole ${frameBytes}-byte frame is present)`);
      }
      return {...fmt, frames, durationS: frames / fmt.sampleRate, dataOffset: body};
    }
    off = body + size + (size & 1); // chunks are padded to an even length
  }
  throw truncated(b);
}

function readFmt(dv: DataView, at: number, size: number): Omit<WavInfo, "frames" | "durationS"> {
  if (size < 16) throw new WavError(`the WAV fmt chunk is ${size} bytes; it needs at least 16`);
  let tag = dv.getUint16(at, true);
  const channels = dv.getUint16(at + 2, true);
  const sampleRate = dv.getUint32(at + 4, true);
  const blockAlign = dv.getUint16(at + 12, true);
  const bits = dv.getUint16(at + 14, true);
  if (tag === 0xfffe) {
    // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
    if (size < 40) throw new WavError(`the WAV fmt chunk says WAVE_FORMAT_EXTENSIBLE but is ${size} bytes; it needs 40`);
    const guidOk = GUID_TAIL.every((v, i) => dv.getUint8(at + 26 + i) === v);
    tag = guidOk ? dv.getUint16(at + 24, true) : -1;
    if (tag === -1) throw new WavError("the WAV fmt chunk is WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID; only PCM and IEEE float WAV are accepted");
  }
  if (tag !== 1 && tag !== 3) {
    const name = FORMAT_NAMES[tag];
    throw new WavError(`the WAV fmt chunk says format ${hex(tag)}${name ? ` (${name})` : ""}; only PCM and IEEE float WAV are accepted`);
  }
  const format = tag === 3 ? "float" : "pcm";
  const okBits = format === "float" ? [32, 64] : [8, 16, 24, 32];
  if (!okBits.includes(bits)) {
    throw new WavError(`the WAV fmt chunk says ${bits}-bit ${format === "float" ? "float" : "PCM"}; accepted are PCM 8, 16, 24, 32-bit and float 32, 64-bit`);
  }
  if (channels < 1 || channels > MAX_CHANNELS) throw new WavError(`the WAV fmt chunk says ${channels} channels; accepted are 1 to ${MAX_CHANNELS}`);
  if (sampleRate < 1 || sampleRate > MAX_RATE) throw new WavError(`the WAV fmt chunk says a sample rate of ${sampleRate} Hz; accepted are 1 to ${MAX_RATE} Hz`);
  // Samples are located by block align; a value that disagrees with channels × bits would misread them all.
  if (blockAlign !== (channels * bits) / 8) {
    throw new WavError(`the WAV fmt chunk is inconsistent (block align ${blockAlign} for ${channels} channels of ${bits}-bit; ` +
      `expected ${(channels * bits) / 8})`);
  }
  return {sampleRate, channels, bitsPerSample: bits, format};
}

export function readWavInfo(buf: Uint8Array): WavInfo {
  const {dataOffset: _, ...info} = parse(buf);
  return info;
}

/** One sample's reader per format, picked once so the frame loop stays monomorphic. */
function sampleReader(b: Uint8Array, l: Layout): (p: number) => number {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (l.format === "float" && l.bitsPerSample === 32) return (p) => { const v = dv.getFloat32(p, true); return v === v ? v : 0; };
  if (l.format === "float") return (p) => { const v = dv.getFloat64(p, true); return v === v ? v : 0; }; // NaN would smear
  if (l.bitsPerSample === 8) return (p) => (b[p]! - 128) / 128; // 8-bit WAV is unsigned, centred on 128
  if (l.bitsPerSample === 16) return (p) => (((b[p + 1]! << 24) >> 16) | b[p]!) / 32768;
  if (l.bitsPerSample === 24) return (p) => (((b[p + 2]! << 24) >> 8) | (b[p + 1]! << 8) | b[p]!) / 8388608;
  return (p) => dv.getInt32(p, true) / 2147483648;
}

/** Samples as float in [-1, 1], channels averaged, written to `out` from `at` on. */
function decodeMono(b: Uint8Array, l: Layout, out: Float32Array, at: number): void {
  const read = sampleReader(b, l);
  const ch = l.channels, step = l.bitsPerSample >> 3, inv = 1 / ch;
  let p = l.dataOffset;
  if (ch === 1) {
    for (let f = 0; f < l.frames; f++, p += step) out[at + f] = read(p);
    return;
  }
  for (let f = 0; f < l.frames; f++) {
    let sum = 0;
    for (let c = 0; c < ch; c++, p += step) sum += read(p);
    out[at + f] = sum * inv;
  }
}

// Resampler: h(τ) = s·sinc(s·τ)·kaiser(τ/W), τ in input samples, s = min(1, out/in) puts the cutoff at the
// lower Nyquist, W = ZEROS/s. 32 zero crossings a side with β = 6 gives ~65 dB stopband and ~-68 dB passband
// ripple; downsampling to 16 kHz the transition band is about 7.5 to 8.5 kHz, so 7.5 kHz still passes and
// 10 kHz is gone. Longer filters cost time linearly (about 176 taps per output from 44.1 kHz).
const ZEROS = 32;
const BETA = 6;
// Entries of the exact polyphase table (one row per phase of the L/M ratio; 28,800 for 44.1 kHz). Above this
// the table holds INTERP_PHASES + 1 rows and each output interpolates between two: only odd rates (96001 Hz)
// get there, at twice the cost per output, rather than building a table of tens of megabytes.
const MAX_TABLE = 1 << 20;
const INTERP_PHASES = 512;

function besselI0(x: number): number {
  let sum = 1, term = 1;
  for (let k = 1; term > 1e-14 * sum; k++) sum += term *= (x / (2 * k)) ** 2;
  return sum;
}

/** One table row for an output at input time base + frac: tap j weighs input base - half + 1 + j. */
function kernelRow(row: Float64Array, frac: number, half: number, s: number, w: number): void {
  const i0b = besselI0(BETA);
  let sum = 0;
  for (let j = 0; j < row.length; j++) {
    const tau = frac + half - 1 - j, x = tau / w;
    let v = 0;
    if (Math.abs(x) < 1) {
      const a = Math.PI * s * tau;
      v = (a === 0 ? 1 : Math.sin(a) / a) * (besselI0(BETA * Math.sqrt(1 - x * x)) / i0b);
    }
    row[j] = v;
    sum += v;
  }
  // Unit DC gain on every phase, so a constant stays constant whatever the phase.
  for (let j = 0; j < row.length; j++) row[j] = row[j]! / sum;
}

/** Four accumulators: the adds no longer wait on each other (~1.5x in V8); taps is a multiple of 4. */
function dot(t: Float64Array, at: number, x: Float32Array, from: number, taps: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (let j = at, i = from, end = at + taps; j < end; j += 4, i += 4) {
    s0 += t[j]! * x[i]!;
    s1 += t[j + 1]! * x[i + 1]!;
    s2 += t[j + 2]! * x[i + 2]!;
    s3 += t[j + 3]! * x[i + 3]!;
  }
  return s0 + s1 + s2 + s3;
}

/** Linear interpolation between the two table rows around fractional row q. */
function between(t: Float64Array, q: number, x: Float32Array, from: number, taps: number): number {
  const qi = Math.floor(q), y0 = dot(t, qi * taps, x, from, taps), y1 = dot(t, (qi + 1) * taps, x, from, taps);
  return y0 + (q - qi) * (y1 - y0);
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const halfWidth = (rate: number) => Math.ceil(ZEROS / Math.min(1, TARGET_RATE / rate));

/** Band-limited resampling of the n samples at x[pad ..] (zeros around them) from `rate` to 16 kHz. */
function resample(x: Float32Array, pad: number, n: number, rate: number): Float32Array {
  const g = gcd(TARGET_RATE, rate);
  const L = TARGET_RATE / g, M = rate / g; // output o sits at input time o·M/L
  const s = Math.min(1, L / M), half = halfWidth(rate), taps = (2 * half + 3) & ~3;
  const exact = L * taps <= MAX_TABLE;
  const rows = exact ? L : INTERP_PHASES + 1;
  const table = new Float64Array(rows * taps);
  for (let r = 0; r < rows; r++) {
    kernelRow(table.subarray(r * taps, (r + 1) * taps), exact ? r / L : r / INTERP_PHASES, half, s, ZEROS / s);
  }
  const out = new Float32Array(Math.ceil((n * L) / M));
  const stepInt = Math.floor(M / L), stepFrac = M % L;
  let base = pad - half + 1, phase = 0; // base: padded index of tap 0; phase: (o·M) mod L
  for (let o = 0; o < out.length; o++) {
    out[o] = exact ? dot(table, phase * taps, x, base, taps) : between(table, (phase / L) * INTERP_PHASES, x, base, taps);
    base += stepInt;
    phase += stepFrac;
    if (phase >= L) { phase -= L; base++; }
  }
  return out;
}

export function decodeWavMono16k(buf: Uint8Array): Float32Array {
  const l = parse(buf);
  // At 16 kHz there is nothing to filter; otherwise zeros around the signal spare the filter loop edge checks.
  const pad = l.sampleRate === TARGET_RATE ? 0 : halfWidth(l.sampleRate) + 4;
  const x = new Float32Array(l.frames + 2 * pad);
  decodeMono(buf, l, x, pad);
  return pad === 0 ? x : resample(x, pad, l.frames, l.sampleRate);
}

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Mono float → 16-bit little-endian signed PCM, clamped and rounded (the whisper binding's input). */
export function toPcm16(samples: Float32Array): ArrayBuffer {
  const ab = new ArrayBuffer(samples.length * 2);
  const out = new Int16Array(ab), dv = new DataView(ab);
  for (let i = 0; i < samples.length; i++) {
    const r = Math.round(samples[i]! * 32768);
    const v = r > 32767 ? 32767 : r < -32768 ? -32768 : r === r ? r : 0; // NaN → silence
    if (LITTLE_ENDIAN_HOST) out[i] = v;
    else dv.setInt16(i * 2, v, true);
  }
  return ab;
}

/**
 * Windows of at most maxS seconds covering every sample once, in order. Each cut goes in the quietest 200 ms
 * (ten 20 ms frames, so a dip between two phonemes does not pass for a pause) of the second half of the
 * window, at the middle of a run of equally quiet spans: a recording is cut in its pauses, not in a word
 * or a sentence, which Whisper would then finish or repeat from the text carried into the next window.
 */
export function splitWindows(samples: Float32Array, rate: number, maxS = 30): Array<{start: number; end: number}> {
  const n = samples.length;
  const maxLen = Math.max(1, Math.floor(maxS * rate));
  const frame = Math.max(1, Math.round(0.02 * rate));
  const span = 10;
  const look = Math.floor(maxLen / 2);
  const windows: Array<{start: number; end: number}> = [];
  let start = 0;
  while (n - start > maxLen) {
    const limit = start + maxLen;
    const energies: number[] = [];
    for (let f = limit - look; f + frame <= limit; f += frame) {
      let e = 0;
      for (let i = f; i < f + frame; i++) e += samples[i]! * samples[i]!;
      energies.push(e);
    }
    let best = Infinity, first = -1, last = -1;
    for (let k = 0; k < energies.length; k++) {
      if (k < Math.min(span, energies.length) - 1) continue;
      const at = k - Math.min(span, energies.length) + 1; // first frame of the span
      // Summed afresh, not as a running sum: adding and taking away loud frames leaves a rounding residue, so a
      // silent stretch would not sum to exactly 0 and which of two silences wins would depend on what came before.
      let sum = 0;
      for (let j = at; j <= k; j++) sum += energies[j]!;
      if (sum < best) { best = sum; first = last = at; }
      else if (sum === best && last === at - 1) last = at;
    }
    const mid = (first + last) / 2 + Math.min(span, energies.length) / 2;
    const cut = first < 0 ? limit : limit - look + Math.round(mid * frame);
    windows.push({start, end: cut});
    start = cut;
  }
  windows.push({start, end: n});
  return windows;
}

/** A canonical WAV file of mono 16-bit PCM at `rate` (what a child engine is given, whatever the client sent). */
export function encodeWavPcm16(samples: Float32Array, rate = TARGET_RATE): Uint8Array {
  const data = new Uint8Array(toPcm16(samples));
  const out = new Uint8Array(44 + data.length);
  const dv = new DataView(out.buffer);
  const text = (at: number, s: string) => [...s].forEach((ch, i) => (out[at + i] = ch.charCodeAt(0)));
  text(0, "RIFF");
  dv.setUint32(4, 36 + data.length, true);
  text(8, "WAVEfmt ");
  dv.setUint32(16, 16, true);
  dv.setUint16(20, 1, true); // PCM
  dv.setUint16(22, 1, true); // mono
  dv.setUint32(24, rate, true);
  dv.setUint32(28, rate * 2, true);
  dv.setUint16(32, 2, true);
  dv.setUint16(34, 16, true);
  text(36, "data");
  dv.setUint32(40, data.length, true);
  out.set(data, 44);
  return out;
}
