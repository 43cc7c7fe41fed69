// Entry point: read the settings, fetch the model if needed, load it, listen, and shut down cleanly.

import {createApp} from "./app.ts";
import {loadModels} from "./load-models.ts";
import {ConfigError, loadConfig} from "./config/config.ts";
import {ModelSourceError} from "./models/resolve.ts";
import {createLogger} from "./observability/log.ts";
import {KEEPS_AT_SHUTDOWN_MS} from "./pipeline/model-handle.ts";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) refuseSettings(err);
    throw err;
  }
  const logger = createLogger(config.logLevel);
  // A stray rejection in one request must not take the whole server down (Node's default is to exit).
  process.on("unhandledRejection", (reason) => {
    logger.error("unhandled rejection (server keeps running)", {error: (reason as Error)?.stack ?? String(reason)});
  });
  let app;
  try {
    app = await createApp(config, await loadModels(config, logger), logger);
  } catch (err) {
    // A setting that names a file (SVC_CHAT_TEMPLATE) is found bad only when it is read.
    if (err instanceof ConfigError) refuseSettings(err);
    if (err instanceof ModelSourceError) {
      logger.error(`no model: ${err.message}`);
      process.exit(3);
    }
    logger.error(`could not start: ${(err as Error).message}`);
    process.exit(1);
  }
  const address = await app.server.listen({host: config.host, port: config.port}).catch((err: Error) => {
    logger.error(`could not listen on ${config.host}:${config.port}: ${err.message}`);
    process.exit(1);
  });
  const info = app.deps.main.engine.info;
  // On remote replicas there are no local decode threads, and Node's worker pool does not decode.
  const engineFields = info.remote ? {replicas: info.remote.replicas.length}
    : {threads: info.threads, uv_threadpool: process.env.UV_THREADPOOL_SIZE ?? "unset"};
  logger.info(`listening on ${address}`, {model: config.modelId, regions: info.regions, ctx: info.contextSize, ...engineFields,
    auth: config.apiKey ? "key" : "off"});
  // Node reads it before any of our code runs, so it can only come from the environment (`npm start` sets 1).
  if (process.env.UV_THREADPOOL_SIZE === undefined && !info.remote) {
    logger.warn("UV_THREADPOOL_SIZE is not set: the engine's decodes hop across Node's 4 worker threads and run slower; " +
      "start with `npm start` or set UV_THREADPOOL_SIZE=1 (docs/performance.md)");
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down", {signal});
    // Past the wait for answered keeps (KEEPS_AT_SHUTDOWN_MS), a close that hangs still ends the process.
    const force = setTimeout(() => process.exit(0), KEEPS_AT_SHUTDOWN_MS + 5000);
    force.unref();
    await app.close().catch((err: Error) => logger.error("shutdown failed", {error: err.message}));
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

/** A bad setting stops the start with exit code 2, one line per problem. */
function refuseSettings(err: ConfigError): never {
  for (const p of err.problems) process.stderr.write(`svc: bad setting ${p}\n`);
  process.stderr.write("svc: not started; fix the settings above (docs/operations.md lists every setting)\n");
  process.exit(2);
}

void main();
