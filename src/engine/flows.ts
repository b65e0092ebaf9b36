/**
 * An engine whose decisions read best as flows — generators that yield commands and take back their
 * results (the session's: a message, a report, the end) — driven by the core's events like any other
 * engine (src/engine/core.ts): each event resumes the flow in progress, which answers with the commands
 * up to the next one that waits. Pure and deterministic.
 */

/** A command that failed as expected (an activity, a run start), thrown into the flow that gave it; `activity`: an activity that gave up. */
export class CallFailed extends Error {
  constructor(
    message: string,
    readonly activity: boolean,
  ) {
    super(message);
    this.name = 'CallFailed';
  }
}

/** A yielded command as the workflow takes it: `waits` false for one carried out at once (the flow goes on with undefined). */
export interface Translated<Out> {
  command: Out;
  waits: boolean;
}

interface Running<In, Out> {
  step: Generator<In, unknown, unknown>;
  done: (value: unknown) => Out[];
  failed: (err: CallFailed) => Out[];
}

/** One flow at a time: begun by an event, resumed by the results of its commands, ended by its return or an unhandled failure. */
export class Flows<In, Out> {
  #running: Running<In, Out> | null = null;

  constructor(private readonly translate: (command: In) => Translated<Out>) {}

  /** Whether a flow waits for a command's result. */
  get busy(): boolean {
    return this.#running !== null;
  }

  /** Begins `step`: its commands up to the first that waits; when it returns, `done`'s; when it fails with a CallFailed, `failed`'s. */
  begin<T>(step: Generator<In, T, unknown>, done: (value: T) => Out[], failed: (err: CallFailed) => Out[]): Out[] {
    if (this.#running) throw new Error('a flow began while another waits for a result');
    this.#running = { step, done: done as (value: unknown) => Out[], failed };
    return this.#advance((s) => s.next());
  }

  /** The result of the command the flow waits on. */
  resume(value: unknown): Out[] {
    return this.#advance((s) => s.next(value));
  }

  /** The command the flow waits on failed: thrown into it (a flow that does not catch it ends with `failed`). */
  fail(err: CallFailed): Out[] {
    return this.#advance((s) => s.throw(err));
  }

  #advance(move: (step: Generator<In, unknown, unknown>) => IteratorResult<In, unknown>): Out[] {
    const running = this.#running;
    if (!running) throw new Error('no flow waits for a result');
    const out: Out[] = [];
    let next: IteratorResult<In, unknown>;
    try {
      next = move(running.step);
      for (;;) {
        if (next.done) break;
        const { command, waits } = this.translate(next.value);
        out.push(command);
        if (waits) return out;
        next = running.step.next(undefined);
      }
    } catch (err) {
      // Anything but a command's own failure is a bug in the flow: thrown on.
      if (!(err instanceof CallFailed)) throw err;
      this.#running = null;
      return [...out, ...running.failed(err)];
    }
    this.#running = null;
    return [...out, ...running.done(next.value)];
  }
}
