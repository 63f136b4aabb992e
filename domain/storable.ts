// What the ledger can store faithfully, checked at the door. PostgreSQL refuses NUL (U+0000) in text and
// jsonb, and a lone surrogate (half of a UTF-16 pair) is not Unicode text at all: jsonb refuses it, text
// silently turns it into U+FFFD. A value that reaches the ledger with either makes every write of it
// fail, deterministically, forever. Deep or circular values break anything recursive (hashing, JSON,
// zod), so shape is checked first, without recursion. Pure and dependency-free: the workflow uses it too.

/** The deepest nesting of arrays and objects a JSON value may have (the value itself counts as 1). */
export const MAX_JSON_DEPTH = 32;

/** Keys that mean something to JavaScript objects: copied into an object they are dropped or worse. */
export const RESERVED_KEYS: readonly string[] = ['__proto__'];

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Why PostgreSQL could not store this text as given, or null when it can. */
export function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000), which PostgreSQL cannot store';
  if (LONE_SURROGATE.test(text)) return 'contains a lone surrogate (an unpaired \\uD800-\\uDFFF), which is not text';
  return null;
}

/** The text with NUL and lone surrogates replaced by U+FFFD: for recording what was refused, never for using it. */
export function storableText(text: string): string {
  return text.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATES, '\uFFFD');
}

/** At most `max` code points (never half a surrogate pair), with … when cut. */
export function cutText(text: string, max: number): string {
  const points = Array.from(text);
  return points.length > max ? `${points.slice(0, max - 1).join('')}…` : text;
}

/** A key or a string as it may appear in a message: quoted and escaped when it is not plain text. */
export function shownText(text: string): string {
  return textProblem(text) === null ? text : JSON.stringify(text);
}

export type JsonProblemKind = 'text' | 'key' | 'depth' | 'circular' | 'size' | 'not_json';

export interface JsonProblem {
  kind: JsonProblemKind;
  /** Where, e.g. `payload.items[3].name`. */
  path: string;
  message: string;
}

export interface JsonLimits {
  maxDepth?: number;
  /** Values (of any kind) at most; past it the value is too large whatever its bytes. */
  maxNodes?: number;
}

function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function isPlainObject(value: object): boolean {
  return Object.getPrototypeOf(value) === Object.prototype;
}

type Frame = { value: unknown; path: string; depth: number } | { leave: object };

/**
 * The first reason `value` is not plain, storable JSON within the limits, or null. Iterative (an explicit
 * stack), so no input can exhaust the call stack; stops at the first problem.
 */
export function findJsonProblem(value: unknown, root = '$', limits: JsonLimits = {}): JsonProblem | null {
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  const maxNodes = limits.maxNodes ?? Number.POSITIVE_INFINITY;
  const ancestors = new Set<object>();
  const stack: Frame[] = [{ value, path: root, depth: 1 }];
  let nodes = 0;
  const problem = (kind: JsonProblemKind, path: string, message: string): JsonProblem => ({
    kind,
    path,
    message: `${path} ${message}`,
  });
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    if ('leave' in frame) {
      ancestors.delete(frame.leave);
      continue;
    }
    const { value: item, path, depth } = frame;
    nodes += 1;
    if (nodes > maxNodes) return problem('size', path, `is past ${maxNodes} values: too large`);
    if (item === null || typeof item === 'boolean') continue;
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return problem('not_json', path, 'is not a finite number');
      continue;
    }
    if (typeof item === 'string') {
      const text = textProblem(item);
      if (text) return problem('text', path, text);
      continue;
    }
    if (typeof item !== 'object') return problem('not_json', path, `is not a JSON value (${typeof item})`);
    if (ancestors.has(item)) return problem('circular', path, 'refers back to an object that contains it (circular)');
    if (depth > maxDepth) return problem('depth', path, `nests deeper than ${maxDepth} levels`);
    if (Array.isArray(item)) {
      if (nodes + item.length > maxNodes) return problem('size', path, `holds ${item.length} items: too large`);
      ancestors.add(item);
      stack.push({ leave: item });
      for (let i = item.length - 1; i >= 0; i--) {
        if (!(i in item)) return problem('not_json', `${path}[${i}]`, 'is a hole in a sparse array');
        stack.push({ value: item[i], path: `${path}[${i}]`, depth: depth + 1 });
      }
      continue;
    }
    if (!isPlainObject(item))
      return problem('not_json', path, `is not a JSON value (${item.constructor?.name ?? 'object without prototype'})`);
    const keys = Object.keys(item);
    if (nodes + keys.length > maxNodes) return problem('size', path, `holds ${keys.length} keys: too large`);
    ancestors.add(item);
    stack.push({ leave: item });
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      const text = textProblem(key);
      if (text) return problem('key', path, `has a key that ${text}`);
      if (RESERVED_KEYS.includes(key))
        return problem('key', path, `has the key "${key}", which is reserved (an object copy would drop it)`);
      stack.push({ value: (item as Record<string, unknown>)[key], path: childPath(path, key), depth: depth + 1 });
    }
  }
  return null;
}

/**
 * A copy of a received value that the ledger can store as a record of what arrived: strings and keys
 * made storable, nesting past the limit and anything not JSON replaced by a note. For refused input only.
 */
export function storableJson(value: unknown): unknown {
  let budget = 10_000;
  const copy = (item: unknown, depth: number): unknown => {
    if (--budget < 0) return '[more values than recorded]';
    if (item === null || typeof item === 'boolean') return item;
    if (typeof item === 'number') return Number.isFinite(item) ? item : String(item);
    if (typeof item === 'string') return storableText(item);
    if (typeof item !== 'object') return `[not JSON: ${typeof item}]`;
    // The depth check comes before any recursion, so the recursion is at most MAX_JSON_DEPTH deep.
    if (depth > MAX_JSON_DEPTH) return `[nested deeper than ${MAX_JSON_DEPTH} levels]`;
    if (Array.isArray(item))
      return Array.from({ length: Math.min(item.length, Math.max(budget, 0)) }, (_, i) => copy(item[i], depth + 1));
    const result: Record<string, unknown> = {};
    for (const [key, element] of Object.entries(item as Record<string, unknown>)) {
      // defineProperty, not assignment: a "__proto__" key stays a key.
      Object.defineProperty(result, storableText(key), {
        value: copy(element, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return result;
  };
  return copy(value, 1);
}
