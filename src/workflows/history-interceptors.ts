/**
 * The history replayer's workflow interceptor module (only its bundle has it, src/workflow-bundle.ts):
 * every state version a run's engine publishes goes out through the `runHistory` sink, called during
 * replay too — that is all a replay for history is for.
 */
import { proxySinks, type Sinks, type WorkflowInterceptors } from '@temporalio/workflow';
import type { ExecutionState } from '../planning/execution-state';
import { installStateObserver } from './history-hook';

export interface RunHistorySinks extends Sinks {
  runHistory: { version(state: ExecutionState): void };
}

export const interceptors = (): WorkflowInterceptors => {
  const { runHistory } = proxySinks<RunHistorySinks>();
  installStateObserver((state) => runHistory.version(state));
  return {};
};
