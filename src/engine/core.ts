/**
 * The engine core: a run is a pure state machine, `(state, event) → (next state, commands)`,
 * and its workflow only carries the commands out (src/workflows/run-engine.ts). Each kind of
 * node (seed 000's planner, seed 003's task tree) is one engine over these commands and events,
 * unit-tested without Temporal. Deterministic: time comes in with each event, nothing here
 * touches the world.
 */
import type { RunStatus } from '../planning/execution-state';
import type { CloseRunInput, PlanExecutionInput, RunReport } from './contract';

/**
 * How an activity is retried and timed out; the workflow maps each to ActivityOptions. `answer`: a model
 * call that may close the run (`CloseOnAnswer`), which a cancellation waits for when it runs locally.
 * The session's: `memory` (its thread's quick writes), `summary` (compression), `route` (is a message a
 * reply?) and `approval` (a message answering a held call).
 */
export type CallPolicy = 'model' | 'step' | 'answer' | 'memory' | 'summary' | 'route' | 'approval';

/**
 * The call without its `CloseOnAnswer`: for a run whose earlier reports are still on their way (a resumed run's
 * `running`), which the answering call's report must not overtake. Its run then closes with the `close` command.
 */
export function withoutCloseOnAnswer<A extends ActivityMap>(command: CallCommand<A>): CallCommand<A> {
  const input = command.input as unknown;
  if (typeof input !== 'object' || input === null || !('close' in input)) return command;
  const { close: _dropped, ...rest } = input as Record<string, unknown>;
  return { ...command, input: rest, policy: 'model' } as CallCommand<A>;
}

/** Activity name → `(input) => Promise<output>`: a factory's activities, as a type. */
export type ActivityMap = { [name: string]: (input: never) => Promise<unknown> };
type InputOf<F> = F extends (input: infer I) => Promise<unknown> ? I : never;
type OutputOf<F> = F extends (input: never) => Promise<infer O> ? O : never;

/** Call one activity; its result comes back as a `result` event of the same name. */
export type CallCommand<A extends ActivityMap> = {
  [K in keyof A & string]: { kind: 'call'; activity: K; input: InputOf<A[K]>; policy: CallPolicy; summary?: string };
}[keyof A & string];

/** The result of a `call`, or of the child, person or failure the engine waited for. */
export type ResultEvent<A extends ActivityMap> = {
  [K in keyof A & string]: { kind: 'result'; activity: K; value: OutputOf<A[K]> };
}[keyof A & string];

/**
 * A person's reply on its way to the run that waits for it: the one way a reply reaches a run, from a run above it or from its session.
 * `confirm`: the engine waits to learn whether the run took it (a `delivered` event); else it goes out in order with the reports.
 */
export interface RelayReply {
  kind: 'relay_reply';
  runId: string;
  text: string;
  confirm?: boolean;
}

/** Commands an engine gives; at most one that waits (call, start_child, await_person) per step, and it comes last. */
export type Command<A extends ActivityMap, Person = never> =
  | CallCommand<A>
  /** Start a child run and wait for its end; it comes back as `child_ended`. */
  | { kind: 'start_child'; workflowId: string; input: PlanExecutionInput; summary: string }
  /** Wait for a person (a reply); it comes back as the event a message handler delivered. */
  | { kind: 'await_person' }
  /** The run's status changed: make it visible (search attribute). */
  | { kind: 'status'; status: RunStatus }
  /** Tell whoever is waiting on this run (its session, or the tree run above it) what happened; fire and forget, in order. */
  | { kind: 'notify_parent'; parentId: string; report: RunReport }
  /** Pass a person's reply down to a child run that asked the question (fire and forget, in order). */
  | RelayReply
  /**
   * The run ends (given just before `end`, by every path to it): its memory thread drops its
   * EPHEMERAL chunks and records how it ended (the `closeRun` activity), even when it was cancelled.
   */
  | { kind: 'close'; input: CloseRunInput }
  /** The run has ended: its state is the workflow's result. */
  | { kind: 'end' }
  /** Start a run that outlives this workflow (a session's run: not a child to wait for); comes back as `done` once started. */
  | { kind: 'start_run'; workflowId: string; input: PlanExecutionInput; summary: string }
  /** Cancel runs, whoever their parent is now; comes back as `done` once asked. */
  | { kind: 'cancel_runs'; runIds: string[] }
  /** Answer the person's message the engine took (`to`: its id in the event): with what became of it, or why it failed. */
  | { kind: 'answer'; to: number; outcome: unknown }
  | { kind: 'answer'; to: number; failure: string }
  /** An event for later: it joins the end of the inbox, behind what is queued there now. */
  | { kind: 'enqueue'; event: Person }
  /** The engine does not take the failure (or cancellation) it was just given: the workflow ends with it, as thrown. */
  | { kind: 'raise' };

export type EngineEvent<A extends ActivityMap, Person = never, Child = unknown> =
  | ResultEvent<A>
  | { kind: 'child_ended'; value: Child }
  /** A confirmed `relay_reply`: whether its run took the reply. */
  | { kind: 'delivered'; ok: boolean }
  /** A `start_run` or `cancel_runs` was carried out. */
  | { kind: 'done' }
  | Person
  /**
   * An activity, child or run start failed for good (retries exhausted, a non-retryable error, an id taken): `error` as
   * a run records it, `reason` the innermost message, `activity` whether an activity gave up.
   */
  | { kind: 'failed'; error: string; reason?: string; activity?: boolean }
  /** The run was cancelled while it waited (`activity`: the cancellation reached it through an activity call). */
  | { kind: 'cancelled'; reason?: string; activity?: boolean };

/** What the workflow drives: an engine takes events one at a time and answers with commands. */
export interface Engine<S, A extends ActivityMap, Person = never, Child = unknown> {
  readonly state: S;
  start(now: Date): Command<A, Person>[];
  handle(event: EngineEvent<A, Person, Child>, now: Date): Command<A, Person>[];
  /**
   * The run's close found it closed already by an answering call (`CloseOnAnswer`) whose workflow task did not
   * count: the run ends with that answer instead (its report went out with the close). Engines that never ask
   * calls to close have none.
   */
  answeredBefore?(answer: string, now: Date): Command<A, Person>[];
}

const BLOCKING: ReadonlySet<string> = new Set(['call', 'start_child', 'await_person', 'end', 'start_run', 'cancel_runs']);
/** True for the commands the workflow waits on (the last of a batch). */
export const isBlocking = <A extends ActivityMap, Person>(c: Command<A, Person>): boolean => BLOCKING.has(c.kind) || (c.kind === 'relay_reply' && c.confirm === true);
