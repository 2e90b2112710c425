/** Where the demo's server puts the MiniLM files (from PRISM_MODEL_DIR), relative to the site root. */
export const MODELS_PATH = '/models/';

/** Where the dev server alone serves the local LoCoMo file (PRISM_LOCOMO) for the developer setting. */
export const DEV_LOCOMO_URL = '/@prism-dev/locomo.json';

