// Limits a deployment relies on: a client that trickles its headers or its body is cut off by
// SVC_HEADERS_TIMEOUT_S / SVC_BODY_TIMEOUT_S without its request ever reaching the model, 200 idle connections do
// not stop ordinary requests, and SVC_MAX_CONNECTIONS closes a connection past the cap. In-process over the engine
// double, on a real listener. No timing is asserted: each wait is bounded by the test's own timeout.

import assert from "node:assert/strict";
import {connect, type Socket} from "node:net";
import {after, describe, test} from "node:test";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

const servers: InProcessApp[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function start(env: Record<string, string>): Promise<{server: InProcessApp; port: number}> {
  const server = await startInProcessApp({env: {SVC_PARALLEL: "1", ...env}, captureLogs: true});
  servers.push(server);
  const url = await server.listen();
  return {server, port: Number(new URL(url).port)};
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
}

/** Resolves with what the server wrote before it closed the socket (an error such as a reset counts as closed). */
function closedBy(server: Socket): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    server.setEncoding("utf8").on("data", (d: string) => (got += d));
    server.once("close", () => resolve(got));
    server.on("error", () => undefined);
  });
}

/** Writes one byte of `text` a second until the socket closes; returns the stopper. */
function trickle(socket: Socket, text: string): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return;
    socket.write(text[i++]!);
  }, 1000);
  socket.once("close", () => clearInterval(timer));
  return () => clearInterval(timer);
}

const chatBody = JSON.stringify({messages: [{role: "user", content: "Hi"}], max_tokens: 2});

async function chatOk(port: number): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"}, body: chatBody});
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).object, "chat.completion");
}

describe("slow clients", () => {
  test("a client that sends its headers a byte a second is cut off, and others are served meanwhile", {timeout: 30_000}, async () => {
    const {port} = await start({SVC_HEADERS_TIMEOUT_S: "2", SVC_BODY_TIMEOUT_S: "4"});
    const loris = await open(port);
    const closed = closedBy(loris);
    trickle(loris, `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Padding: ${"a".repeat(200)}\r\n`);
    await chatOk(port);
    const answer = await closed;
    // Node answers a header timeout with 408 before closing, or just closes: either way the connection is gone.
    assert.ok(answer === "" || /^HTTP\/1\.1 408/.test(answer), answer);
  });

  test("a client that sends its body a byte a second gets 408 and its request never reaches the model", {timeout: 30_000}, async () => {
    const {server, port} = await start({SVC_HEADERS_TIMEOUT_S: "1", SVC_BODY_TIMEOUT_S: "3"});
    const slow = await open(port);
    const closed = closedBy(slow);
    slow.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${chatBody.length}\r\n\r\n`);
    trickle(slow, chatBody);
    await chatOk(port);
    const answer = await closed;
    assert.match(answer, /^HTTP\/1\.1 408/);
    // One request reached the model: the ordinary one. The trickled one was never started.
    assert.equal(server.engine.decodes.length, 1, `requests the engine decoded: ${server.engine.decodes.length}`);
  });

  test("200 idle connections and a slow client do not stop ordinary requests", {timeout: 60_000}, async () => {
    const {port} = await start({});
    const idle = await Promise.all(Array.from({length: 200}, () => open(port)));
    const loris = await open(port);
    const stop = trickle(loris, "GET /health HTTP/1.1\r\nHost: x\r\n");
    try {
      for (let i = 0; i < 5; i++) await chatOk(port);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(health.status, 200);
    } finally {
      stop();
      for (const s of [...idle, loris]) s.destroy();
    }
  });

  test("/health states the limits: deadlines, connection cap, shutdown grace and each body route's limit in bytes", async () => {
    const {server} = await start({SVC_HEADERS_TIMEOUT_S: "2", SVC_BODY_TIMEOUT_S: "4", SVC_MAX_CONNECTIONS: "77", SVC_BODY_LIMIT_MB: "1",
      SVC_SHUTDOWN_GRACE_S: "3"});
    const limits = (await server.get("/health")).body.limits;
    assert.equal(limits.headers_timeout_s, 2);
    assert.equal(limits.body_timeout_s, 4);
    assert.equal(limits.max_connections, 77);
    assert.equal(limits.shutdown_grace_s, 3);
    for (const route of ["POST /v1/chat/completions", "POST /v1/messages", "POST /v1/responses", "POST /tokenize"]) {
      assert.equal(limits.body_bytes[route], 1024 * 1024, route);
    }
  });

  test("past SVC_MAX_CONNECTIONS a new connection is closed at once; below it, requests are served again", {timeout: 30_000}, async () => {
    const {port} = await start({SVC_MAX_CONNECTIONS: "5"});
    const held = await Promise.all(Array.from({length: 5}, () => open(port)));
    const extra = await open(port);
    const answer = await closedBy(extra);
    assert.equal(answer, "", "the connection past the cap is closed without an answer");
    for (const s of held) s.destroy();
    // The server counts a connection as gone once it sees the close: retry until it has.
    for (let i = 0; ; i++) {
      try {
        await chatOk(port);
        break;
      } catch (err) {
        if (i >= 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
});
