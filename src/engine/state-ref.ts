/**
 * A run's state passed to its activities by reference: each activity input carries the JSON patch
 * from the state its run sent with the previous call (`base`) to this one (`seq`), not the whole
 * state. The worker keeps the last state of each run it served and applies the patch; a worker
 * without it (another worker, a restart) asks the workflow for the state it sent (a query). So
 * history grows with what changed per step, not with the size of the state.
 *
 * Pure and deterministic: the workflow side runs in the workflow sandbox.
 */
import { applyPatch, compare, type Operation } from 'fast-json-patch';

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

function decode(ops: PatchOp[]): Operation[] {
  return ops.map((o): Operation => (o[0] === '-' ? { op: 'remove', path: o[1] } : { op: o[0] === '+' ? 'add' : 'replace', path: o[1], value: o[2] }));
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
  // A copy: an earlier activity of the run may still hold (and read) the base object.
  return { seq: ref.seq, state: applyPatch(base, decode(ref.patch), false, false).newDocument };
}

/** True for an activity input whose state comes by reference. */
export function hasStateRef(input: unknown): input is { stateRef: StateRef } {
  return typeof input === 'object' && input !== null && 'stateRef' in input;
}
