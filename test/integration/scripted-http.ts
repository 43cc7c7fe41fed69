// A local HTTP server with a scripted handler, for tests that drive a remote engine's client over real HTTP
// (a stand-in for llama-server): the handler gets the request's path and whole body.

import {createServer, type ServerResponse} from "node:http";

export interface ScriptedServer {
  url: string;
  close(): Promise<void>;
}

export async function scriptedServer(handle: (path: string, body: string, res: ServerResponse) => void): Promise<ScriptedServer> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => handle(req.url ?? "/", body, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as {port: number}).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
