// The domain's words as SQL literals, for CHECKs and for statements that compare against a word list.
import { sql } from 'drizzle-orm';

export const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
/** A comma-separated list of literals, for `IN (…)`. */
export const oneOf = (words: readonly string[]) => sql.raw(words.map(literal).join(', '));
export const pattern = (source: string) => sql.raw(literal(source));
