/** The version of the code a worker runs (model, prompts, tools), and the check each step of a run makes against it. */
import { ApplicationFailure } from '@temporalio/common';
import { PROMPT_VERSION } from '../calls/registry';
import type { ModelProvider } from '../llm/provider';
import { staleReason, type CodeVersion } from '../planning/code-version';
import type { ExecutionState } from '../planning/execution-state';
import type { ToolRegistry } from '../tools/registry';

export const codeVersionOf = (provider: Pick<ModelProvider, 'label'>, tools: ToolRegistry): CodeVersion => ({ model: provider.label, prompts: PROMPT_VERSION, tools: tools.fingerprint() });

/**
 * Before a step of a run: a run planned on other code is stale, and fails for good with the reason
 * (its `lastError`). Runs planned before runs recorded a version are not checked.
 */
export function assertCurrent(state: Pick<ExecutionState, 'codeVersion'>, current: CodeVersion, versioned = false): void {
  // Under Worker Deployment Versioning a run only ever reaches workers of its own version (src/temporal/deployment.ts).
  if (versioned) return;
  const reason = state.codeVersion ? staleReason(state.codeVersion, current) : null;
  if (reason) throw ApplicationFailure.nonRetryable(reason, 'StaleRun');
}
