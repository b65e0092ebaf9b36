/**
 * A run's state history from what is already durable: its Temporal history, replayed through the
 * same workflow code with a bundle that hands out every state version the engine publishes
 * (src/workflows/history-interceptors.ts). Nothing is written on the run's hot path; the cost is a
 * replay when someone asks (cached for runs that have ended).
 */
import type { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { LRUCache } from 'lru-cache';
import { isTerminal, type ExecutionState } from '../planning/execution-state';
import { runVersions, type RunVersion } from '../planning/run-history';
import { PLAN_WORKFLOW_TYPE } from '../workflows/definitions';
import { RunNotFoundError } from './runs';

export class VersionNotFoundError extends Error {
  constructor(
    readonly runId: string,
    readonly version: number,
  ) {
    super(`run ${runId} has no version ${version}`);
    this.name = 'VersionNotFoundError';
  }
}

interface Replayed {
  versions: RunVersion[];
  states: Map<number, ExecutionState>;
}

export interface RunHistoryOptions {
  /** The workflow bundle built with the history module (`bundleWorkflows({history: true})`), made once when first needed. */
  bundle: () => Promise<string>;
  /** The data converter runs are stored with (encryption, claim check): the workers'. */
  dataConverter?: DataConverter;
}

export class RunHistory {
  #bundle: Promise<string> | undefined;
  /** Replays of runs that have ended: their history no longer changes. */
  readonly #ended = new LRUCache<string, Replayed>({ max: 200 });

  constructor(
    private readonly client: Client,
    private readonly options: RunHistoryOptions,
  ) {}

  /** Every version of the run's state, oldest first, with what changed it. */
  async versions(runId: string): Promise<RunVersion[]> {
    return (await this.replay(runId)).versions;
  }

  /** Every version of the run's state itself, oldest first. */
  async states(runId: string): Promise<ExecutionState[]> {
    return [...(await this.replay(runId)).states.values()].sort((a, b) => a.version - b.version);
  }

  /** The state exactly as it was at `version`. */
  async at(runId: string, version: number): Promise<ExecutionState> {
    const state = (await this.replay(runId)).states.get(version);
    if (!state) throw new VersionNotFoundError(runId, version);
    return state;
  }

  private async replay(runId: string): Promise<Replayed> {
    const cached = this.#ended.get(runId);
    if (cached) return cached;
    const handle = this.client.workflow.getHandle(runId);
    let history;
    try {
      const description = await handle.describe();
      if (description.type !== PLAN_WORKFLOW_TYPE) throw new RunNotFoundError(runId);
      history = await handle.fetchHistory();
    } catch (err) {
      if (err instanceof RunNotFoundError || (err instanceof Error && err.name === 'WorkflowNotFoundError')) throw new RunNotFoundError(runId);
      throw err;
    }
    const states: ExecutionState[] = [];
    const { Worker } = await import('@temporalio/worker');
    this.#bundle ??= this.options.bundle();
    const code = await this.#bundle;
    await Worker.runReplayHistory(
      {
        workflowBundle: { code },
        replayName: `history-${runId}`,
        ...(this.options.dataConverter ? { dataConverter: this.options.dataConverter } : {}),
        sinks: { runHistory: { version: { fn: (_info: unknown, state: ExecutionState) => void states.push(state), callDuringReplay: true } } },
      },
      history,
      runId,
    );
    const replayed = runVersions(states);
    const last = replayed.versions.at(-1);
    if (last && isTerminal(last.status)) this.#ended.set(runId, replayed);
    return replayed;
  }
}
