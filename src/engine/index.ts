// The engine's one entrance. Everything outside src/engine imports from here: the contract the pipeline drives
// (engine.ts), the errors the API maps to statuses, the factories of the two engines (in-process llama.cpp and
// remote llama-server replicas), the rule for reusing stored KV (cut plans), state files for named sessions,
// and the library surface the side models use. The folders below (kv/, llama/, remote/) are the engine's own.

export * from "./engine.ts";
export * from "./errors.ts";
export {beyondTrainingWarning, contextPositions, describeRope, mainContextAsk} from "./context-plan.ts";

// Reusing stored KV: the prefix arithmetic (core/prefix.ts) and the engine's rule on top of it.
export {commonPrefix, emptyMemory, exactLength, piecesFrom, planCuts, reusable, reusableByPieces} from "./kv/region-memory.ts";
export type {CutPlan, RegionMemory} from "./kv/region-memory.ts";

// State files on disk (the disk tier and named sessions' handles) and what identifies a compatible state.
export {DiskStore} from "./kv/disk-store.ts";
export {newStateId, readManifest, removeState, statePath, verifyState, writeState} from "./kv/state-files.ts";
export type {StateIdentity, StateManifest} from "./kv/state-files.ts";
export {modelIdentity, stateIdentity} from "./llama/state-identity.ts";
export {ggufTrainContext} from "./llama/gguf-context.ts";

// The two engines.
export {LlamaEngine} from "./llama/llama-engine.ts";
export {RemoteEngine} from "./remote/remote-engine.ts";
export {ReplicaSetupError} from "./remote/remote-identity.ts";

// The library, for the side models.
export * from "./llama/library.ts";
