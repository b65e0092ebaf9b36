/**
 * Values the code inside an activity reads of the call it runs for (its call key, its model usage tally,
 * its live-token scope, the text sink of the model call in progress), each a slot of ONE AsyncLocalStorage.
 * Node 20 hands every store it has ever run to each promise the process makes afterwards, so each store
 * of its own costs every promise of the worker (the SDK's, gRPC's) a little more: four stores ~120 ns a
 * promise more than one, here.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

type Slots = Readonly<Record<symbol, unknown>>;
const storage = new AsyncLocalStorage<Slots>();

/** One value of the shared store: set for the duration of `run`, read with `get`, the other slots kept. */
export class ContextSlot<T> {
  readonly #key: symbol;
  constructor(name: string) {
    this.#key = Symbol(name);
  }

  /** Runs `fn` with this slot set to `value` (nested runs see theirs; the other slots stay as they were). */
  run<R>(value: T, fn: () => R): R {
    return storage.run({ ...storage.getStore(), [this.#key]: value }, fn);
  }

  /** The value of the innermost `run` this code is in, if any. */
  get(): T | undefined {
    return storage.getStore()?.[this.#key] as T | undefined;
  }
}
