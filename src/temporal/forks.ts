/**
 * Forks (issue 28 §2): a new run that starts from an earlier state of another — a version, the
 * moment before a step ran, or before a task began — with a person's edits, and goes on from there
 * on today's code. The source's history (src/temporal/run-history.ts) gives the state; the fork is
 * an ordinary run of the same user, started as every run is (`Runs.startOptions`).
 */
import type { Client } from '@temporalio/client';
import { editsProblem, forkState, forkVersion, type ForkEdits, type ForkPoint } from '../planning/fork';
import { PLAN_WORKFLOW_TYPE } from '../workflows/definitions';
import type { RunHistory } from './run-history';
import { newRunId, RunNotFoundError, type Runs } from './runs';

/** A fork point the run never reached, or edits that do not fit it: 409 (404 for an unknown step or task). */
export class ForkRefusedError extends Error {
  constructor(
    message: string,
    readonly kind: 'unknown' | 'never_reached' | 'invalid',
  ) {
    super(message);
    this.name = 'ForkRefusedError';
  }
}

export class Forks {
  constructor(
    private readonly client: Client,
    private readonly runs: Pick<Runs, 'startOptions'>,
    private readonly history: Pick<RunHistory, 'states'>,
  ) {}

  async fork(sourceRunId: string, point: ForkPoint, edits: ForkEdits = {}): Promise<{ runId: string; forkedFrom: { runId: string; version: number }; status: string }> {
    const states = await this.history.states(sourceRunId);
    const version = forkVersion(states, point);
    if (typeof version !== 'number') throw new ForkRefusedError(version.message, version.kind);
    const source = states.find((s) => s.version === version);
    if (!source) throw new RunNotFoundError(sourceRunId);
    const problem = editsProblem(source, edits);
    if (problem) throw new ForkRefusedError(problem, 'invalid');
    const runId = newRunId(source.userId);
    const state = forkState(source, runId, edits, new Date());
    const options = this.runs.startOptions({
      userId: source.userId,
      goal: state.goal,
      ...(source.engine === 'tree' ? { engine: 'tree' as const } : {}),
      ...(source.allow ? { allow: source.allow } : {}),
    });
    const [input] = options.args;
    await this.client.workflow.start(PLAN_WORKFLOW_TYPE, {
      ...options,
      workflowId: runId,
      args: [{ ...input, ...(source.agent ? { agent: source.agent } : {}), fork: { state } }],
      staticSummary: `${source.userId}: fork of ${sourceRunId}@${version}: ${state.goal}`.slice(0, 200),
    });
    return { runId, forkedFrom: { runId: sourceRunId, version }, status: state.status };
  }
}
