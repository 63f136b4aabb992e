// What the client tells Temporal about an effect, kept within Temporal's documented limits whichever server
// takes it: an effect whose start the server refuses every time is an effect without a workflow. The text is
// cut at code points (never half a surrogate pair), with … where it was cut.
//   - A Keyword search attribute is a VARCHAR(255) column in SQL visibility (PostgreSQL, MySQL, SQLite:
//     Temporal's schema), and any value is refused past frontend.searchAttributesSizeOfValueLimit (2 KB by
//     default, counted on the encoded payload).
//   - A workflow's static summary is refused past limit.userMetadataSummarySize (400 bytes by default,
//     counted on the encoded payload: the JSON string with its quotes and escapes, plus its encoding).
// A cluster configured below these defaults still refuses some starts: the ledger reconciler isolates those
// and says why (docs/reconciler.md).

/** Characters in a Keyword search attribute value (SQL visibility's column). */
export const KEYWORD_MAX_CHARACTERS = 255;
/** Bytes of a search attribute value's JSON; the default limit is 2048 for the whole payload. */
export const SEARCH_ATTRIBUTE_MAX_JSON_BYTES = 1900;
/**
 * Bytes of a static summary's JSON; the default limit is 400 for the whole payload, whose encoding metadata
 * (`encoding: json/plain`) and framing take 27 more.
 */
export const STATIC_SUMMARY_MAX_JSON_BYTES = 360;

const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text), 'utf8');

/** `text` cut to at most `maxPoints` code points whose JSON takes at most `maxJsonBytes` bytes. */
export function fitText(text: string, maxPoints: number, maxJsonBytes: number): string {
  const points = Array.from(text);
  if (points.length <= maxPoints && jsonBytes(text) <= maxJsonBytes) return text;
  const fits = (keep: number) => jsonBytes(`${points.slice(0, keep).join('')}…`) <= maxJsonBytes;
  // The longest prefix that fits, found by halving: a fit prefix's shorter prefixes fit too.
  let low = 0;
  let high = Math.min(points.length, maxPoints - 1);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  return `${points.slice(0, low).join('')}…`;
}

/** A Keyword search attribute's value (EffectSummary): a list column in the Web UI. */
export const keywordValue = (text: string) => fitText(text, KEYWORD_MAX_CHARACTERS, SEARCH_ATTRIBUTE_MAX_JSON_BYTES);

/** A workflow's static summary (the Web UI's one-line title of a run). */
export const staticSummaryText = (text: string) =>
  fitText(text, Number.POSITIVE_INFINITY, STATIC_SUMMARY_MAX_JSON_BYTES);
