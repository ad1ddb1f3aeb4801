/**
 * The reset mask tree (`X-ResetMask`): which fields an Update resets even when the request holds
 * their default value. A node's presence is what matters; its children narrow it further.
 */
export interface ResetMask {
  /** Named children: field names, list indexes ("12") and map keys, as strings. */
  readonly children: ReadonlyMap<string, ResetMask>;
  /** The `*` child: applies to every direct child of this node. */
  readonly wildcard: ResetMask | undefined;
}

/** The mask builders share one mutable shape so the parser and merge can grow trees in place. */
export interface MutableResetMask extends ResetMask {
  readonly children: Map<string, MutableResetMask>;
  wildcard: MutableResetMask | undefined;
}

/** Creates an empty mask node; an empty root means "reset nothing beyond non-default values". */
export function emptyResetMask(): MutableResetMask {
  return { children: new Map(), wildcard: undefined };
}

/** Deep-copies a mask so merged results never alias (and so never mutate) their inputs. */
function copyResetMask(mask: ResetMask): MutableResetMask {
  const out = emptyResetMask();
  for (const [key, child] of mask.children) out.children.set(key, copyResetMask(child));
  if (mask.wildcard !== undefined) out.wildcard = copyResetMask(mask.wildcard);
  return out;
}

/** Merges `from` into `into` in place; used by the parser and by header merging. */
function mergeResetMaskInto(into: MutableResetMask, from: ResetMask): void {
  for (const [key, child] of from.children) {
    const existing = into.children.get(key);
    if (existing === undefined) into.children.set(key, copyResetMask(child));
    else mergeResetMaskInto(existing, child);
  }
  if (from.wildcard !== undefined) {
    if (into.wildcard === undefined) into.wildcard = copyResetMask(from.wildcard);
    else mergeResetMaskInto(into.wildcard, from.wildcard);
  }
}

/** Unites several masks (e.g. several `X-ResetMask` header values): a path named by any is named. */
export function mergeResetMasks(...masks: readonly (ResetMask | undefined)[]): ResetMask {
  const out = emptyResetMask();
  for (const mask of masks) if (mask !== undefined) mergeResetMaskInto(out, mask);
  return out;
}

/**
 * The mask for one field, list index or map key: the named child merged with the `*` child, as
 * the reference implementation does, so `l.*.m,l.3.n` names both `m` and `n` in element 3.
 * Undefined when neither exists, which the apply rules read as "not named".
 */
export function subMask(mask: ResetMask | undefined, key: string): ResetMask | undefined {
  if (mask === undefined) return undefined;
  const named = mask.children.get(key);
  if (named === undefined) return mask.wildcard;
  if (mask.wildcard === undefined) return named;
  return mergeResetMasks(named, mask.wildcard);
}

/** Structural equality of two masks (undefined equals only undefined), for tests and callers. */
export function resetMasksEqual(a: ResetMask | undefined, b: ResetMask | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.children.size !== b.children.size) return false;
  for (const [key, child] of a.children) {
    if (!b.children.has(key) || !resetMasksEqual(child, b.children.get(key))) return false;
  }
  return resetMasksEqual(a.wildcard, b.wildcard);
}

const utf8 = new TextEncoder();

/** Orders strings by their UTF-8 bytes, the order of the canonical form (and of Go's sort.Strings). */
export function compareBytewise(a: string, b: string): number {
  // No Buffer: the SDK's package (without Node's types) holds this file too.
  const left = utf8.encode(a);
  const right = utf8.encode(b);
  const shared = Math.min(left.length, right.length);
  for (let index = 0; index < shared; index++) if (left[index] !== right[index]) return (left[index] ?? 0) < (right[index] ?? 0) ? -1 : 1;
  return left.length === right.length ? 0 : left.length < right.length ? -1 : 1;
}

/**
 * The leaf paths of a mask (`a.(b,c)` → `[["a","b"],["a","c"]]`, the wildcard as `"*"`), sorted
 * bytewise, so errors and logs can name the fields a mask touches without printing the tree.
 */
export function fieldPathsOf(mask: ResetMask): string[][] {
  const out: string[][] = [];
  const walk = (node: ResetMask, prefix: string[]): void => {
    const entries: [string, ResetMask][] = [...node.children];
    if (node.wildcard !== undefined) entries.push(['*', node.wildcard]);
    entries.sort(([a], [b]) => compareBytewise(a, b));
    if (entries.length === 0) {
      if (prefix.length > 0) out.push(prefix);
      return;
    }
    for (const [key, child] of entries) walk(child, [...prefix, key]);
  };
  walk(mask, []);
  return out;
}
