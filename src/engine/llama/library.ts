// The engine library as the side models reach it (embeddings, rerank, decisions, classification, the guard):
// the node-llama-cpp types they hold and the internal calls they make, all through the engine's entrance
// (src/engine/index.ts), so that the library's surface outside src/engine is this one list.

export type {Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token} from "node-llama-cpp";
export {InsufficientMemoryError} from "node-llama-cpp";
export {createEmbeddingsContext, nativeJinja, pooledEmbedding} from "./internals.ts";
export {neverShift} from "./context-overflow.ts";
