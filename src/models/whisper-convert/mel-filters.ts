// The mel filterbank Whisper was trained with: librosa.filters.mel(sr=16000, n_fft=400, n_mels=N) with
// its defaults (Slaney mel scale, Slaney area normalisation), which OpenAI ships as mel_filters.npz and
// whisper.cpp reads from the model file. CTranslate2 checkpoints do not carry it, so we compute it the way
// librosa does, in float64, and store float32 as the npz does.

export const SAMPLE_RATE = 16000;
export const N_FFT = 400;

// Slaney's scale: linear below 1 kHz (200/3 Hz per mel), logarithmic above.
const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOG_STEP = Math.log(6.4) / 27;

export function hzToMel(hz: number): number {
  return hz >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP : hz / F_SP;
}

export function melToHz(mel: number): number {
  return mel >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL)) : F_SP * mel;
}

/** Row-major [nMels][1 + N_FFT/2] weights. */
export function melFilters(nMels: number, sampleRate = SAMPLE_RATE, nFft = N_FFT): Float32Array {
  const bins = 1 + Math.floor(nFft / 2);
  const fftFreqs = Array.from({length: bins}, (_, i) => (i * (sampleRate / 2)) / (bins - 1));
  const maxMel = hzToMel(sampleRate / 2);
  const melF = Array.from({length: nMels + 2}, (_, i) => melToHz((i * maxMel) / (nMels + 1)));
  const out = new Float32Array(nMels * bins);
  for (let m = 0; m < nMels; m++) {
    const lowerWidth = melF[m + 1]! - melF[m]!;
    const upperWidth = melF[m + 2]! - melF[m + 1]!;
    const enorm = 2 / (melF[m + 2]! - melF[m]!);
    for (let k = 0; k < bins; k++) {
      const lower = (fftFreqs[k]! - melF[m]!) / lowerWidth;
      const upper = (melF[m + 2]! - fftFreqs[k]!) / upperWidth;
      out[m * bins + k] = Math.max(0, Math.min(lower, upper)) * enorm;
    }
  }
  return out;
}
