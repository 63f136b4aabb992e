// Reading a request file for the CLI (`approve`, `revise`): a path or stdin, strict UTF-8, JSON. A file that
// is missing, a directory or unreadable, and bytes that are not UTF-8, are the user's input gone wrong: a
// typed error, never a raw ENOENT, and never a text quietly repaired with U+FFFD and then approved.
import { readFileSync } from 'node:fs';
import { InvalidEffectRequestError } from '../ledger/errors.js';

export type RequestFileProblem = 'not_found' | 'not_a_file' | 'unreadable' | 'not_utf8';

/** The request file cannot be read as UTF-8 text. Nothing was read further, nothing was written. */
export class RequestFileError extends Error {
  override readonly name = 'RequestFileError';
  constructor(
    readonly code: RequestFileProblem,
    readonly source: string,
    message: string,
  ) {
    super(`${source === '-' ? 'standard input' : `request file ${source}`}: ${message}`);
  }
}

const fileProblems: Record<string, [RequestFileProblem, string]> = {
  ENOENT: ['not_found', 'no such file'],
  ENOTDIR: ['not_found', 'no such file (a part of the path is not a directory)'],
  EISDIR: ['not_a_file', 'is a directory, not a request file'],
  EACCES: ['unreadable', 'permission denied'],
  EPERM: ['unreadable', 'permission denied'],
};

// fatal: the first byte sequence that is not UTF-8 throws instead of becoming U+FFFD.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes of `source` ('-' for stdin) as text; a RequestFileError for what a user can fix. */
export function readRequestText(source: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(source === '-' ? 0 : source);
  } catch (error) {
    const problem = fileProblems[(error as NodeJS.ErrnoException).code ?? ''];
    if (!problem) throw error;
    throw new RequestFileError(problem[0], source, problem[1]);
  }
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new RequestFileError(
      'not_utf8',
      source,
      `is not UTF-8 text (invalid bytes near offset ${firstInvalidUtf8(bytes)})`,
    );
  }
}

/** A request read from `source` and parsed as JSON (not yet validated). */
export function readRequestFile(source: string): unknown {
  const text = readRequestText(source);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidEffectRequestError('malformed', `request is not JSON (${(error as Error).message})`);
  }
}

/** Where decoding first fails (the end of the shortest prefix that does not decode), for the message. */
function firstInvalidUtf8(bytes: Buffer): number {
  let low = 0;
  let high = bytes.length;
  // The shortest prefix that fails to decode ends in the offending sequence.
  while (low < high) {
    const mid = (low + high) >> 1;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, mid + 1), { stream: true });
      low = mid + 1;
    } catch {
      high = mid;
    }
  }
  return low;
}
