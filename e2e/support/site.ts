export { sha256Hex } from '../../src/util/hash.ts';

/** URL prefix under which e2e pages find the model files (served from PRISM_MODEL_DIR). */
export const MODELS_URL_PATH = '/models/';
