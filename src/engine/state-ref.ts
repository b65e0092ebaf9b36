/**
 * A run's state passed to its activities by reference: each activity input carries the JSON patch
 * from the state its run sent with the previous call (`base`) to this one (`seq`), not the whole
 * state. The worker keeps the last state of each run it served and applies the patch; a worker
 * without it (another worker, a restart) asks the workflow for the state it sent (a query). So
 * history grows with what changed per step, not with the size of the state.
 *
 * Pure and deterministic: the workflow side runs in the workflow sandbox.
 */
/** The query a worker asks a run for the state of its latest call, when it has no base for the patch. */
export const SENT_STATE_QUERY = 'threadline.sentState';

/**
 * A JSON patch operation (RFC 6902's add, replace and remove), short, as every step's patch is written
 * into history: so `["+", path, value]`, `["=", path, value]`, `["-", path]`.
 */
export type PatchOp = ['+' | '=', string, unknown] | ['-', string];

/** What an activity input carries instead of `state`. `base` null: the patch applies to `{}`. */
export interface StateRef {
  seq: number;
  base: number | null;
  patch: PatchOp[];
}

/** A JSON copy: what the payload converter would make of the value (undefined fields dropped). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null') as unknown;

/** Whether JSON writes an object's field holding `value` (it drops undefined, functions and symbols). */
const written = (value: unknown): boolean => value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

const pointer = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Appends to `out` the operations that turn the JSON of `from` into the JSON of `to`, as
 * a JSON diff would, but skipping what both share by identity: a run's states are
 * immutable and each shares what did not change with the one before, so a step costs what it changed,
 * not the size of the state (which grows with the run).
 */
function diff(from: unknown, to: unknown, path: string, out: PatchOp[]): void {
  if (from === to) return;
  if (Array.isArray(from) && Array.isArray(to)) {
    const common = Math.min(from.length, to.length);
    for (let i = 0; i < common; i++) diff(written(from[i]) ? from[i] : null, written(to[i]) ? to[i] : null, `${path}/${i}`, out);
    for (let i = from.length - 1; i >= to.length; i--) out.push(['-', `${path}/${i}`]);
    for (let i = from.length; i < to.length; i++) out.push(['+', `${path}/${i}`, asJson(written(to[i]) ? to[i] : null)]);
    return;
  }
  if (isPlainObject(from) && isPlainObject(to)) {
    for (const key of Object.keys(from)) if (written(from[key]) && !(Object.hasOwn(to, key) && written(to[key]))) out.push(['-', `${path}/${pointer(key)}`]);
    for (const key of Object.keys(to)) {
      const value = to[key];
      if (!written(value)) continue;
      if (Object.hasOwn(from, key) && written(from[key])) diff(from[key], value, `${path}/${pointer(key)}`, out);
      else out.push(['+', `${path}/${pointer(key)}`, asJson(value)]);
    }
    return;
  }
  // Values of other kinds (or of two kinds): compared as JSON, replaced whole when they differ.
  const text = JSON.stringify(to) ?? 'null';
  if ((JSON.stringify(from) ?? 'null') !== text) out.push(['=', path, JSON.parse(text) as unknown]);
}

/**
 * Freezes `value` and what it holds, stopping at what is frozen already (a state's parts shared
 * with the state before): the identity `diff` relies on then cannot change under it — an engine
 * writing into a state it sent fails there and then, instead of its workers missing the change.
 */
function freeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value) || ArrayBuffer.isView(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) freeze(child);
}

type Container = Record<string, unknown> | unknown[];

/**
 * `ops` applied to `base` without changing it, as RFC 6902 applies add, replace and remove (add into
 * an array inserts, `-` appends): only the objects and arrays on the paths the patch touches are
 * copied, the rest is shared with `base` (copying the whole state at every call grew with the run).
 */
function applyOps(base: unknown, ops: readonly PatchOp[]): unknown {
  let root = base;
  const copies = new Set<unknown>();
  const copied = (value: unknown): Container => {
    if (copies.has(value)) return value as Container;
    if (typeof value !== 'object' || value === null) throw new Error('a state patch goes through a value that is not an object or an array');
    const copy: Container = Array.isArray(value) ? value.slice() : { ...(value as Record<string, unknown>) };
    copies.add(copy);
    return copy;
  };
  for (const op of ops) {
    const keys =
      op[1] === ''
        ? []
        : op[1]
            .slice(1)
            .split('/')
            .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop();
    if (last === undefined) {
      // The whole document (compare makes this only when one side is not an object).
      root = op[0] === '-' ? undefined : op[2];
      continue;
    }
    root = copied(root);
    let parent = root as Container;
    for (const key of keys) {
      const child = copied((parent as Record<string, unknown>)[key]);
      (parent as Record<string, unknown>)[key] = child;
      parent = child;
    }
    if (Array.isArray(parent)) {
      const at = last === '-' ? parent.length : Number(last);
      if (op[0] === '-') parent.splice(at, 1);
      else if (op[0] === '+') parent.splice(at, 0, op[2]);
      else parent[at] = op[2];
    } else if (op[0] === '-') delete parent[last];
    else parent[last] = op[2];
  }
  return root;
}

function patchBetween(from: unknown, to: unknown): PatchOp[] {
  const out: PatchOp[] = [];
  diff(from, to, '', out);
  return out;
}

/** The state a run sent with its call number `seq`. */
export interface SentState {
  seq: number;
  state: unknown;
}

/** The workflow side: remembers what it sent last and turns the next state into a patch against it. */
export class StateSender {
  #last: SentState | null = null;

  /** The reference for an activity input carrying `state`. */
  send(state: unknown): StateRef {
    freeze(state);
    const base = this.#last;
    const seq = (base?.seq ?? 0) + 1;
    this.#last = { seq, state };
    return { seq, base: base?.seq ?? null, patch: patchBetween(base ? base.state : {}, state) };
  }

  /** The latest call's reference again, as a patch to `{}`: for a worker without its base. Null before the first call. */
  resendWhole(): StateRef | null {
    const last = this.#last;
    return last ? { seq: last.seq, base: null, patch: patchBetween({}, last.state) } : null;
  }

  /** What the query answers: the state of the latest call, or null before the first. */
  get last(): SentState | null {
    return this.#last;
  }
}

/**
 * The state `ref` names, from the state of the run's previous call; undefined when `known` is not
 * the base the patch was made against (the caller then asks the run).
 */
export function resolveStateRef(known: SentState | undefined, ref: StateRef): SentState | undefined {
  if (known?.seq === ref.seq) return known; // a retry of the same call
  if (ref.base !== null && known?.seq !== ref.base) return undefined;
  const base = ref.base === null ? {} : (known?.state as object);
  // Never in place: an earlier activity of the run may still hold (and read) the base object.
  return { seq: ref.seq, state: applyOps(base, ref.patch) };
}

/** True for an activity input whose state comes by reference. */
export function hasStateRef(input: unknown): input is { stateRef: StateRef } {
  return typeof input === 'object' && input !== null && 'stateRef' in input;
}
