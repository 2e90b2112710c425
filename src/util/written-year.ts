/** A year written out in four digits (1800–2099): the mark of a date named outright rather than relative to now. */
export const WRITTEN_YEAR = /\b(1[89]|20)\d\d\b/;
