// Entry point of `svc` (bin/svc.cjs) and `npm start`: read the command line and the settings, fetch the model if
// needed, load it, listen, and shut down cleanly.

import {VERSION, createApp} from "./app.ts";
import {CommandLineError, parseCommandLine} from "./cli/flags.ts";
import {helpText} from "./cli/help.ts";
import {loadModels, UnusableTemplateError} from "./load-models.ts";
import {ConfigError, loadConfig} from "./config/config.ts";
import {ModelSourceError} from "./models/resolve.ts";
import {createLogger} from "./observability/log.ts";
import {KEEPS_AT_SHUTDOWN_MS} from "./pipeline/model-handle.ts";

async function main(): Promise<void> {
  let config;
  try {
    const command = parseCommandLine(process.argv.slice(2));
    if (command.kind === "help") {
      process.stdout.write(helpText(VERSION));
      return;
    }
    if (command.kind === "version") {
      process.stdout.write(`svc ${VERSION}\n`);
      return;
    }
    config = loadConfig({...process.env, ...command.env});
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CommandLineError) refuseSettings(err);
    throw err;
  }
  const logger = createLogger(config.logLevel);
  process.on("SIGTERM", exitOnSignal);
  process.on("SIGINT", exitOnSignal);
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
    if (err instanceof UnusableTemplateError) {
      // As a bad SVC_CHAT_TEMPLATE file: the same exit code, since the remedy is that setting.
      process.stderr.write(`svc: ${err.message}\nsvc: not started\n`);
      process.exit(2);
    }
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
  // Node reads it before any of our code runs, so it can only come from the environment (`svc` and `npm start` set 1).
  if (process.env.UV_THREADPOOL_SIZE === undefined && !info.remote) {
    logger.warn("UV_THREADPOOL_SIZE is not set: the engine's decodes hop across Node's 4 worker threads and run slower; " +
      "start with `npm start` or set UV_THREADPOOL_SIZE=1 (docs/performance.md)");
  }

  stopOnSignal(async () => {
    logger.info("shutting down", {grace_s: config.shutdownGrace, running: app.deps.stats.processing});
    await app.close({graceMs: config.shutdownGrace * 1000, logger});
  }, () => app.cutShort(), config.shutdownGrace * 1000);
}

/** Until the server is up, a signal just ends the process (nothing has been promised to anyone yet). */
function exitOnSignal(signal: NodeJS.Signals): void {
  process.stderr.write(`svc: ${signal} while starting: stopped\n`);
  process.exit(0);
}

/**
 * SIGTERM or SIGINT runs `shutdown` once and exits 0 (1 if it failed); a second signal cuts the grace short
 * (`hurry`). Past the grace, the cancelled requests' close and the keeps' wait, a shutdown that still hangs ends anyway.
 */
function stopOnSignal(shutdown: () => Promise<void>, hurry: () => void, graceMs: number): void {
  process.removeListener("SIGTERM", exitOnSignal);
  process.removeListener("SIGINT", exitOnSignal);
  let stopping = false;
  const onSignal = () => {
    if (stopping) {
      hurry();
      return;
    }
    stopping = true;
    setTimeout(() => {
      process.stderr.write("svc: shutdown did not finish in time; exiting\n");
      process.exit(1);
    }, graceMs + KEEPS_AT_SHUTDOWN_MS + 10_000).unref();
    shutdown().then(() => process.exit(0), (err: Error) => {
      process.stderr.write(`svc: shutdown failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    });
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

/** A bad setting stops the start with exit code 2, one line per problem. */
function refuseSettings(err: ConfigError | CommandLineError): never {
  const what = err instanceof CommandLineError ? "bad argument" : "bad setting";
  for (const p of err.problems) process.stderr.write(`svc: ${what} ${p}\n`);
  process.stderr.write("svc: not started; fix the settings above (`svc --help` and docs/operations.md list every setting)\n");
  process.exit(2);
}

void main();
