/** The version of the code a worker runs (model, prompts, tools), and the check each step of a run makes against it. */
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { PROMPT_VERSION } from '../llm/prompts';
import type { ModelProvider } from '../llm/provider';
import { staleReason, type CodeVersion } from '../planning/code-version';
import type { ExecutionState } from '../planning/execution-state';
import type { ToolRegistry } from '../tools/registry';

/** The worker's tools as a fingerprint: their names and parameter schemas. */
export function toolsFingerprint(tools: ToolRegistry): string {
  const described = [...tools.describe()].sort((a, b) => a.name.localeCompare(b.name));
  return createHash('sha256').update(JSON.stringify(described)).digest('hex').slice(0, 16);
}

export const codeVersionOf = (provider: Pick<ModelProvider, 'label'>, tools: ToolRegistry): CodeVersion => ({ model: provider.label, prompts: PROMPT_VERSION, tools: toolsFingerprint(tools) });

/**
 * Before a step of a run: a run planned on other code is stale, and fails for good with the reason
 * (its `lastError`). Runs planned before runs recorded a version are not checked.
 */
export function assertCurrent(state: Pick<ExecutionState, 'codeVersion'>, current: CodeVersion): void {
  const reason = state.codeVersion ? staleReason(state.codeVersion, current) : null;
  if (reason) throw ApplicationFailure.nonRetryable(reason, 'StaleRun');
}
