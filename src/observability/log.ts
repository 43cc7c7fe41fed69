// Plain, one-line-per-event logging to stderr. Operators read these lines; keep them short and
// greppable ("svc <level> <message> key=value ...").

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const ORDER: Record<LogLevel, number> = {debug: 10, info: 20, warn: 30, error: 40, silent: 100};

function formatFields(fields?: Record<string, unknown>): string {
  if (!fields) return "";
  let out = "";
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    const s = typeof v === "string" ? (/[\s"=]/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v);
    out += ` ${k}=${s}`;
  }
  return out;
}

export function createLogger(level: LogLevel = "info", write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const at = ORDER[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < at) return;
    write(`${new Date().toISOString()} svc ${lvl} ${msg}${formatFields(fields)}\n`);
  };
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

/** A logger that records lines, for tests. */
export function createMemoryLogger(): Logger & {lines: string[]} {
  const lines: string[] = [];
  const logger = createLogger("info", (l) => lines.push(l.trimEnd()));
  return Object.assign(logger, {lines});
}
