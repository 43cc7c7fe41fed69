// Server-sent events on a raw Node response: one `data:` line per event (optionally an `event:` line),
// a comment line when the stream has been quiet for the keepalive interval, and hang-up detection.

import type {ServerResponse} from "node:http";

export class SseStream {
  private lastWrite = Date.now();
  private readonly timer: NodeJS.Timeout;
  private ended = false;

  constructor(private readonly res: ServerResponse, keepaliveMs: number, headers: Record<string, string> = {}) {
    res.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
      ...headers,
    });
    res.flushHeaders();
    const tick = Math.max(10, Math.min(keepaliveMs / 4, 1000));
    this.timer = setInterval(() => {
      if (Date.now() - this.lastWrite >= keepaliveMs) this.write(": keepalive\n\n");
    }, tick);
    this.timer.unref();
    res.on("close", () => this.stopTimer());
  }

  get closed(): boolean {
    return this.ended || this.res.destroyed || this.res.writableEnded;
  }

  send(data: unknown, event?: string): void {
    const payload = typeof data === "string" ? data : JSON.stringify(data);
    this.write(event ? `event: ${event}\ndata: ${payload}\n\n` : `data: ${payload}\n\n`);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopTimer();
    if (!this.res.writableEnded) this.res.end();
  }

  private write(chunk: string): void {
    if (this.closed) return;
    this.lastWrite = Date.now();
    this.res.write(chunk);
  }

  private stopTimer(): void {
    clearInterval(this.timer);
  }
}
