/**
 * The commands an engine gathers while it handles one event: what a change of state makes
 * (`status`, the parent's report) and what it sends on the side, then the wait that ends the step.
 * Shared by every engine, so a change of status is reported the same way everywhere.
 */
import * as model from '../planning/execution-state';
import type { ExecutionState, RunEnding, RunStatus } from '../planning/execution-state';
import type { ActivityMap, Command } from './core';
import { parentReport } from './report';

export class Outbox<A extends ActivityMap> {
  #pending: Command<A>[] = [];

  push(command: Command<A>): void {
    this.#pending.push(command);
  }

  /** Forgets what is pending (a new event starts a new batch). */
  clear(): void {
    this.#pending = [];
  }

  /** What is pending, ending with `last` (the step's wait, or `end`). */
  emit(last: Command<A>): Command<A>[] {
    const out = [...this.#pending, last];
    this.#pending = [];
    return out;
  }

  /**
   * The run ends: what is pending, then the closing of its memory with how it ended (none when
   * `ending` is null: the run does not own its memory, or its answering call closed it), then `end`.
   */
  end(state: ExecutionState, ending: RunEnding | null): Command<A>[] {
    if (ending) this.push({ kind: 'close', input: { state, ending } });
    return this.emit({ kind: 'end' });
  }

  /** What is pending, with no new wait after it (the run goes on waiting for the same thing). */
  drain(): Command<A>[] {
    const out = this.#pending;
    this.#pending = [];
    return out;
  }

  /**
   * The state changed from `previous` to `next`: a new status is made visible and reported to
   * `reportTo` (none when null); `reportEnds: false` keeps terminal statuses out of the report;
   * `approvals`: waits for a tool's approval are reported too; `reviews`: waits for a plan review are
   * (each asked only when the status enters or leaves that wait; see `parentReport`).
   */
  changed(next: ExecutionState, previous: RunStatus, reportTo: string | null, reportEnds = true, approvals: () => boolean = () => false, reviews: () => boolean = () => false): void {
    if (next.status === previous) return;
    this.push({ kind: 'status', status: next.status });
    const waits = (status: RunStatus) => reportTo !== null && (next.status === status || previous === status);
    const report = parentReport<A>(next, previous, reportTo, waits('waiting_approval') && approvals(), waits('waiting_review') && reviews());
    if (report && (reportEnds || !model.isTerminal(next.status))) this.push(report);
  }
}
