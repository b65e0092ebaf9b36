/**
 * Tool calls that wait for a person's approval (issue 28 §3), pure: which tools need it (the
 * operator's `TOOL_APPROVAL` and a run's own `approval`, names or patterns with `*`), what a
 * waiting call shows (`pendingApproval`) and the person's decision on it.
 */

/** A tool call parked until a person decides (ExecutionState `pendingApproval`). */
export interface PendingApproval {
  stepId: string;
  /** A tree run's task whose iteration made the call. */
  taskIndex?: string;
  tool: string;
  args: Record<string, unknown>;
  /** Why it waits: the pattern of the policy that matched. */
  reason: string;
  /**
   * The run whose call it is, when that is a run below this one (a sub-plan's, a group's, a sub-agent's):
   * this run shows it (src/engine/relay.ts), and a decision sent here goes down to that run.
   */
  runId?: string;
}

/** `POST /v1/runs/:runId/approval`: run it, run it with other arguments, or not at all (the feedback is what the model sees). */
export interface ApprovalDecision {
  stepId: string;
  decision: 'approve' | 'reject' | 'edit';
  args?: Record<string, unknown>;
  feedback?: string;
}

/** Why a decision cannot be taken on `state` now, or null when it can (both engines' update validator). */
export function approvalProblem(state: { status: string; pendingApproval?: PendingApproval | null }, decision: Pick<ApprovalDecision, 'stepId'>): string | null {
  const pending = state.pendingApproval;
  if (state.status !== 'waiting_approval' || !pending) return `run is ${state.status}, not waiting for an approval`;
  if (decision.stepId !== pending.stepId) return `step ${decision.stepId} is not waiting for approval (step ${pending.stepId} is)`;
  return null;
}

/** What an edit adds to the step's observations: both the proposed and the edited arguments. */
export const editNote = (pending: PendingApproval, args: Record<string, unknown>, feedback: string | undefined): string =>
  `the person edited the call's arguments from ${JSON.stringify(pending.args)} to ${JSON.stringify(args)}${feedback ? `: ${feedback}` : ''}`;

/** Whether `pattern` names `tool`: the name itself, `*` for all, or a glob such as `github.*` or `notes_*`. */
export function matchesTool(pattern: string, tool: string): boolean {
  const p = pattern.trim();
  if (p === '*' || p === tool) return true;
  if (!p.includes('*')) return false;
  const re = new RegExp(
    `^${p
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(tool);
}

/** The pattern that makes a call of `tool` wait for approval, or null when none does. */
export function approvalNeeded(tool: string, patterns: readonly string[] | undefined): string | null {
  return patterns?.find((p) => matchesTool(p, tool)) ?? null;
}

/** A comma- or space-separated list (`TOOL_APPROVAL`), de-duplicated, blanks dropped. */
export function parsePatterns(text: string | undefined): string[] {
  return [...new Set((text ?? '').split(/[\s,]+/).filter(Boolean))];
}

/** Calls every run holds for the person, whatever the policy says: nothing is scheduled unasked. */
export const ALWAYS_HELD = ['schedule_run'] as const;

/** The policy of a run: the calls always held, the operator's, plus what its starter adds (it can add, never remove). */
export const runApproval = (operator: readonly string[], added: readonly string[] | undefined): string[] => [...new Set([...ALWAYS_HELD, ...operator, ...(added ?? [])])];

/** What the rejected call's observation says (kind `rejected`): the model must not call it again as it was without asking. */
export function rejectionText(pending: PendingApproval, feedback: string | undefined): string {
  const said = feedback?.trim() ? `: ${feedback.trim()}` : '';
  return `the person rejected the call ${pending.tool}(${JSON.stringify(pending.args)})${said}. Do not make this call again as it was without asking them.`;
}

/** How a session asks the person about a held call (the report's `question`, the conversation's turn). */
export function approvalQuestion(pending: PendingApproval): string {
  const where = pending.taskIndex ? ` (task ${pending.taskIndex})` : '';
  return `May I call ${pending.tool}(${JSON.stringify(pending.args)})${where}? It waits for your approval (${pending.reason}). Say yes to run it, no (and why) to reject it, or say what to change.`;
}
