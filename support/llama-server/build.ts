// The tests' and benchmarks' way to the llama-server binary: the server's own build (src/models/llama-server-build.ts).
//
//   npx tsx support/llama-server/build.ts      prints the binary's path (building it first if needed)

import {ensureLlamaServer} from "../../src/models/llama-server-build.ts";

export {cpuFlags, ensureLlamaServer, type LlamaServerBuild} from "../../src/models/llama-server-build.ts";

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    process.stdout.write(`${ensureLlamaServer().binary}\n`);
  } catch (err) {
    process.stderr.write(`llama-server: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
