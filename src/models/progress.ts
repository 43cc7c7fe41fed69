// Progress for the slow parts of a first start (downloads, extraction, hashing multi-GB files). A bar is
// only useful on a terminal; under a service manager or CI the same information goes out as sparse log
// lines so that logs stay readable and greppable.

import cliProgress from "cli-progress";
import type {Logger} from "../observability/log.ts";

export type ProgressMode = "auto" | "bar" | "lines";

export interface ProgressReporter {
  /** Absolute number of bytes done so far. */
  update(done: number): void;
  /** The work completed; prints the final state. */
  finish(): void;
  /** The work failed or was cancelled; clears the bar without claiming completion. */
  stop(): void;
}

export interface ProgressOptions {
  label: string;
  /** Total bytes, or null when the size is not known up front. */
  total: number | null;
  mode?: ProgressMode;
  logger: Logger;
  /** Where the bar draws; process.stderr by default. */
  stream?: NodeJS.WriteStream;
  /** Clock in ms, injectable so tests need not sleep. */
  now?: () => number;
}

const MB = 1024 * 1024;
// Without a total we cannot log percentages; one line per this many bytes keeps logs sparse.
const UNKNOWN_TOTAL_STEP = 100 * MB;

const mb = (n: number) => (n / MB).toFixed(1);

export function resolveMode(mode: ProgressMode | undefined, stream: NodeJS.WriteStream = process.stderr): "bar" | "lines" {
  if (mode === "bar" || mode === "lines") return mode;
  return stream.isTTY ? "bar" : "lines";
}

export function startProgress(opts: ProgressOptions): ProgressReporter {
  const stream = opts.stream ?? process.stderr;
  const mode = resolveMode(opts.mode, stream);
  // A bar needs a total to draw; with none we fall back to lines rather than invent one.
  if (mode === "bar" && opts.total !== null && opts.total > 0) return barReporter(opts, opts.total, stream);
  return lineReporter(opts);
}

function barReporter(opts: ProgressOptions, total: number, stream: NodeJS.WriteStream): ProgressReporter {
  const now = opts.now ?? Date.now;
  const started = now();
  const bar = new cliProgress.SingleBar({
    format: `${opts.label} [{bar}] {percentage}% | {doneMb}/{totalMb} MB | {speed} MB/s | ETA {eta_formatted}`,
    stream,
    barsize: 30,
    hideCursor: true,
    etaBuffer: 50,
  }, cliProgress.Presets.shades_classic);
  const payload = (done: number) => {
    const secs = Math.max((now() - started) / 1000, 0.001);
    return {doneMb: mb(done), totalMb: mb(total), speed: (done / MB / secs).toFixed(1)};
  };
  bar.start(total, 0, payload(0));
  let closed = false;
  return {
    update(done) {
      if (!closed) bar.update(Math.min(done, total), payload(done));
    },
    finish() {
      if (closed) return;
      closed = true;
      bar.update(total, payload(total));
      bar.stop();
    },
    stop() {
      if (closed) return;
      closed = true;
      bar.stop();
    },
  };
}

function lineReporter(opts: ProgressOptions): ProgressReporter {
  const now = opts.now ?? Date.now;
  const started = now();
  const {total, logger, label} = opts;
  let nextStep = 0; // next percentage (multiple of 10) or, without a total, next byte mark to log
  let last = 0;
  let closed = false;

  const speed = (done: number) => (done / MB / Math.max((now() - started) / 1000, 0.001)).toFixed(1);
  const logPercent = (pct: number, done: number) => {
    const fields: Record<string, unknown> = {mb: `${mb(done)}/${mb(total ?? 0)}`, mbps: speed(done)};
    if (pct > 0 && pct < 100 && done > 0) {
      fields.eta_s = Math.round(((now() - started) / 1000) * ((total ?? 0) - done) / done);
    }
    logger.info(`${label} ${pct}%`, fields);
  };

  const report = (done: number) => {
    last = done;
    if (total !== null && total > 0) {
      const pct = Math.min(100, Math.floor((done * 100) / total));
      while (nextStep <= pct) {
        logPercent(nextStep, done);
        nextStep += 10;
      }
    } else if (done >= nextStep) {
      logger.info(`${label} ${mb(done)} MB`, {mbps: speed(done)});
      nextStep = (Math.floor(done / UNKNOWN_TOTAL_STEP) + 1) * UNKNOWN_TOTAL_STEP;
    }
  };

  report(0);
  return {
    update(done) {
      if (!closed) report(done);
    },
    finish() {
      if (closed) return;
      closed = true;
      if (total !== null && total > 0) report(total);
      else logger.info(`${label} done`, {mb: mb(last), mbps: speed(last)});
    },
    stop() {
      closed = true;
    },
  };
}
