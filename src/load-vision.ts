// SVC_MMPROJ: the main model reads pictures. node-llama-cpp has no multimodal support, so the model runs in a
// llama-server child (built from the llama.cpp node-llama-cpp bundles, or SVC_LLAMA_SERVER) started with the
// projector, supervised like every child, and driven through the remote engine: one engine and one prompt cache
// for text and pictures. Part of the composition root.

import {availableParallelism} from "node:os";
import {dirname, join} from "node:path";
import type {Config} from "./config/config.ts";
import {contextPositions, ggufTrainContext, mainContextAsk} from "./engine/index.ts";
import {ensureLlamaServer} from "./models/llama-server-build.ts";
import {resolveModel} from "./models/resolve.ts";
import type {Logger} from "./observability/log.ts";
import {startLlamaServerChild, type LlamaServerChild} from "./side-models/llama-server-child.ts";

/** The child's /health name. */
export const VISION_CHILD = "main-vision";

/** Resolves the projector, finds or builds llama-server, and starts the main model in it; resolves once it serves. */
export async function startVisionChild(config: Config, modelPath: string, logger: Logger): Promise<LlamaServerChild> {
  const projector = await resolveModel(config.mmproj!, {modelsDir: config.modelsDir, logger, progress: config.progress});
  logger.info("vision projector ready", {path: projector.path, sha256: projector.sha256 ?? "not hashed (local path)"});
  const binary = config.llamaServer ?? ensureLlamaServer({cacheDir: dirname(config.modelsDir), log: (line) => logger.info(line)}).binary;
  // The context the in-process engine would have taken: SVC_CTX_SIZE, or the default clamped to the training length.
  const positions = contextPositions(mainContextAsk(config.ctxSize), await ggufTrainContext(modelPath) ?? Number.MAX_SAFE_INTEGER);
  const threads = config.threads ?? availableParallelism();
  const args = ["-m", modelPath, "--mmproj", projector.path, "-np", String(config.parallel), "-c", String(positions * config.parallel),
    "-t", String(threads), "-fa", config.flashAttention ? "on" : "off", "--no-webui",
    // Named sessions keep a slot's state in a file the child writes (engine/remote/remote-sessions.ts).
    ...(config.fork && config.cacheDir ? ["--slot-save-path", `${join(config.cacheDir, "slots")}/`] : [])];
  return startLlamaServerChild({name: VISION_CHILD, label: "the main model's llama-server (vision)", binary, args, logger});
}
