/**
 * A run's state passed to its activities by reference: each activity input carries the JSON patch
 * from the state its run sent with the previous call (`base`) to this one (`seq`), not the whole
 * state. The worker keeps the last state of each run it served and applies the patch; a worker
 * without it (another worker, a restart) asks the workflow for the state it sent (a query). So
 * history grows with what changed per step, not with the size of the state.
 *
 * Pure and deterministic: the workflow side runs in the workflow sandbox.
 */
import { compare, type Operation } from 'fast-json-patch';

/** The query a worker asks a run for the state of its latest call, when it has no base for the patch. */
export const SENT_STATE_QUERY = 'threadline.sentState';

/**
 * A JSON patch operation, short: `compare` makes only add, replace and remove, and every step's
 * patch is written into history, so `["+", path, value]`, `["=", path, value]`, `["-", path]`.
 */
export type PatchOp = ['+' | '=', string, unknown] | ['-', string];

/** What an activity input carries instead of `state`. `base` null: the patch applies to `{}`. */
export interface StateRef {
  seq: number;
  base: number | null;
  patch: PatchOp[];
}

function encode(ops: Operation[]): PatchOp[] {
  return ops.map((o): PatchOp => {
    switch (o.op) {
      case 'add':
        return ['+', o.path, o.value];
      case 'replace':
        return ['=', o.path, o.value];
      case 'remove':
        return ['-', o.path];
      default:
        throw new Error(`compare made a ${o.op} operation`);
    }
  });
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

/** The state a run sent with its call number `seq`. */
export interface SentState {
  seq: number;
  state: unknown;
}

/** A JSON copy: what the payload converter would make of the value (undefined fields dropped). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

/** The workflow side: remembers what it sent last and turns the next state into a patch against it. */
export class StateSender {
  #last: SentState | null = null;

  /** The reference for an activity input carrying `state`. */
  send(state: unknown): StateRef {
    const json = asJson(state) as object;
    const base = this.#last;
    const seq = (base?.seq ?? 0) + 1;
    this.#last = { seq, state: json };
    return { seq, base: base?.seq ?? null, patch: encode(compare(base ? (base.state as object) : {}, json)) };
  }

  /** The latest call's reference again, as a patch to `{}`: for a worker without its base. Null before the first call. */
  resendWhole(): StateRef | null {
    const last = this.#last;
    return last ? { seq: last.seq, base: null, patch: encode(compare({}, last.state as object)) } : null;
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
