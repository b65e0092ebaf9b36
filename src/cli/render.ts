/**
 * The pure half of `npm run chat`: the wire shape of a run as the client reads
 * it, the diff of two successive states into printable events, and the text of
 * each event. No I/O here, so every line the person sees is unit-tested.
 */
import type { z } from 'zod';
import type { ExecutionStateSchema, MessageOutcomeSchema, SessionViewSchema, TokenEventSchema } from '../api/response-schemas';
import { DEMO_LABEL } from '../llm/demo-provider';
import { isTerminal } from '../planning/execution-state';
import { stepMark, stepNote } from '../planning/progress';
import { WAITING } from '../sessions/session-model';
import { oneLine } from '../text/clip';

/** A run as the REST API sends it (DESIGN.md §4), validated at the edge with the API's own response schema. */
export type RunState = z.infer<typeof ExecutionStateSchema>;
export type RunStep = RunState['steps'][number];

/** Something worth one or more printed lines, found by comparing two states. */
export type ChatEvent =
  | { kind: 'model'; label: string }
  | { kind: 'plan'; steps: RunStep[]; revised: boolean }
  | { kind: 'step'; step: RunStep; observation: string | null; observationKind: string | null }
  | { kind: 'question'; stepId: string; question: string }
  | { kind: 'progress'; text: string }
  | { kind: 'review'; planId: string }
  | { kind: 'completed'; answer: string }
  | { kind: 'failed'; error: string }
  | { kind: 'cancelled' };

/** Long observations are cut so one step stays one line. */
export const MAX_OBSERVATION_WIDTH = 200;

/** Longest step description shown; the rest of the line is the observation. */
export const MAX_STEP_WIDTH = 160;

/**
 * What a step does, e.g. `tool calculator {"expression":"12*7"}` or
 * `reason: Compare the totals`. An ask_user step shows its description: its
 * question gets a line of its own when it is asked.
 */
export function describeStep(step: RunStep): string {
  const what = (() => {
    switch (step.type) {
      case 'tool':
        return `tool ${step.tool ?? '?'} ${JSON.stringify(step.args ?? {})}`;
      case 'subplan':
        return `subplan: ${step.goal ?? step.description}${step.childRunId ? ` (run ${step.childRunId})` : ''}`;
      default:
        return `${step.type}: ${step.description}`;
    }
  })();
  return oneLine(what, MAX_STEP_WIDTH);
}

/**
 * One printed line for a step in its current status, with the observation it
 * produced when it has finished: `[x] 1. tool calculator {…}  → {"value":84}`.
 */
export function stepLine(step: RunStep, observation: string | null = null, observationKind: string | null = null): string {
  const head = `${stepMark(step.status)} ${step.index}. ${describeStep(step)}`;
  const said = stepNote(step.status);
  const note = said ? `  (${said})` : '';
  if (observation === null) return head + note;
  const shown = observationKind === 'user_reply' ? JSON.stringify(oneLine(observation, MAX_OBSERVATION_WIDTH)) : oneLine(observation, MAX_OBSERVATION_WIDTH);
  return `${head}  → ${shown}${note}`;
}

/** The model label, said loudly when it is the offline demo so nobody mistakes it for a real model. */
export function modelLine(label: string): string {
  return label === DEMO_LABEL ? `model: ${label} — the OFFLINE DEMO model (fixed rules, not a language model; set OPENAI_API_KEY or OPENAI_BASE_URL on the worker for a real one)` : `model: ${label}`;
}

/** The latest observation a step produced, if any. */
function observationOf(state: RunState, stepId: string): RunState['observations'][number] | undefined {
  for (let i = state.observations.length - 1; i >= 0; i--) {
    const o = state.observations[i];
    if (o?.stepId === stepId) return o;
  }
  return undefined;
}

/** The question a waiting run asks, or null. */
export function pendingQuestion(state: RunState): { stepId: string; question: string } | null {
  if (state.status !== 'waiting_user' || state.currentStepId === null) return null;
  const step = state.steps.find((s) => s.id === state.currentStepId);
  return step ? { stepId: step.id, question: step.question ?? step.description } : null;
}

export const isEnded = (state: RunState): boolean => isTerminal(state.status);

/** The plan a tree run waits on a review of, or null. */
export function pendingReview(state: RunState): { planId: string } | null {
  if (state.status !== 'waiting_review') return null;
  // A child's plan shown here: the review sent here goes down to it, and names its plan.
  const planId = state.reviewIn?.planId ?? state.planId;
  return planId ? { planId } : null;
}

/** The call the run waits to have approved, once per step. */
export function pendingApproval(state: RunState): NonNullable<RunState['pendingApproval']> | null {
  return state.status === 'waiting_approval' && state.pendingApproval ? state.pendingApproval : null;
}

/** A person's answer to a held tool call, as typed. */
export type ApprovalAnswer = { decision: 'approve' } | { decision: 'reject'; feedback?: string } | { decision: 'edit'; args: Record<string, unknown> };

/** `approve` (or yes/ok), `reject [why]` (or no), `edit {json args}`; null for anything else (or args that are not a JSON object). */
export function parseApprovalAnswer(line: string): ApprovalAnswer | null {
  const trimmed = line.trim();
  const [word = ''] = trimmed.split(/\s+/);
  const text = trimmed.slice(word.length).trim();
  switch (word.toLowerCase()) {
    case 'approve':
    case 'yes':
    case 'y':
    case 'ok':
      return { decision: 'approve' };
    case 'reject':
    case 'no':
    case 'n':
      return text ? { decision: 'reject', feedback: text } : { decision: 'reject' };
    case 'edit': {
      try {
        const args: unknown = JSON.parse(text);
        return args && typeof args === 'object' && !Array.isArray(args) ? { decision: 'edit', args: args as Record<string, unknown> } : null;
      } catch {
        return null;
      }
    }
    default:
      return null;
  }
}

/** A person's answer to a plan review, as typed. */
export type ReviewAnswer = { decision: 'approve' } | { decision: 'revise'; feedback: string } | { decision: 'reject'; feedback?: string } | { decision: 'edit' };

/** `approve` (or yes/ok), `revise <feedback>`, `reject [why]`, `edit`; null for anything else. */
export function parseReviewAnswer(line: string): ReviewAnswer | null {
  const [word = '', ...rest] = line.trim().split(/\s+/);
  const text = rest.join(' ');
  switch (word.toLowerCase()) {
    case 'approve':
    case 'yes':
    case 'ok':
      return { decision: 'approve' };
    case 'revise':
      return text ? { decision: 'revise', feedback: text } : null;
    case 'reject':
    case 'no':
      return text ? { decision: 'reject', feedback: text } : { decision: 'reject' };
    case 'edit':
      return { decision: 'edit' };
    default:
      return null;
  }
}

/** `/skip 1-2 [reason]` or `/redo 1-2 [reason]`, typed at any prompt of a tree run; null for anything else. */
export function parseSteer(line: string): { action: 'skip' | 'redo'; index: string; reason?: string } | null {
  const m = /^\/(skip|redo)\s+(1(?:-\d+)*)(?:\s+(.+))?$/.exec(line.trim());
  if (!m) return null;
  return { action: m[1] === 'skip' ? 'skip' : 'redo', index: m[2] ?? '1', ...(m[3] ? { reason: m[3].trim() } : {}) };
}

/**
 * Events between `prev` (null before the first state) and `next`, in the order
 * to print them. States may arrive coalesced (several transitions at once), so
 * everything is derived from the difference, never from a single transition.
 */
export function diffStates(prev: RunState | null, next: RunState): ChatEvent[] {
  const events: ChatEvent[] = [];
  if (next.model && next.model !== prev?.model) events.push({ kind: 'model', label: next.model });

  const before = new Map((prev?.steps ?? []).map((s) => [s.id, s]));
  const stepEvent = (step: RunStep): ChatEvent => {
    const finished = step.status === 'completed' || step.status === 'failed';
    const obs = finished ? observationOf(next, step.id) : undefined;
    return { kind: 'step', step, observation: obs?.content ?? null, observationKind: obs?.kind ?? null };
  };
  const known = next.steps.filter((s) => before.has(s.id) && before.get(s.id)?.status !== s.status);
  const added = next.steps.filter((s) => !before.has(s.id));
  // In the order things happen: known steps finish (or are replaced or skipped),
  // new steps are planned, then steps start — and, if the state arrived late, finish.
  events.push(...known.filter((s) => s.status !== 'running').map(stepEvent));
  if (added.length > 0) {
    events.push({ kind: 'plan', steps: added.map((s) => ({ ...s, status: 'pending' as const })), revised: before.size > 0 });
  }
  const later = [...known.filter((s) => s.status === 'running'), ...added.filter((s) => s.status !== 'pending')];
  const runningLast = (s: RunStep) => (s.status === 'running' ? 1 : 0);
  events.push(...later.sort((a, b) => runningLast(a) - runningLast(b) || a.index - b.index).map(stepEvent));

  if (next.progress && next.progress !== prev?.progress) events.push({ kind: 'progress', text: next.progress });
  const review = pendingReview(next);
  if (review && (prev === null || pendingReview(prev)?.planId !== review.planId)) events.push({ kind: 'review', ...review });
  const asked = pendingQuestion(next);
  if (asked && (prev === null || pendingQuestion(prev)?.stepId !== asked.stepId)) events.push({ kind: 'question', ...asked });

  if (prev?.status !== next.status) {
    if (next.status === 'completed') events.push({ kind: 'completed', answer: next.finalAnswer ?? '' });
    if (next.status === 'failed') events.push({ kind: 'failed', error: next.lastError ?? 'unknown error' });
    if (next.status === 'cancelled') events.push({ kind: 'cancelled' });
  }
  return events;
}

/** The printed text of one event (may span lines). */
export function renderEvent(event: ChatEvent): string {
  switch (event.kind) {
    case 'model':
      return modelLine(event.label);
    case 'plan': {
      const head = event.revised ? `plan revised (+${event.steps.length} step${event.steps.length === 1 ? '' : 's'}):` : `plan (${event.steps.length} step${event.steps.length === 1 ? '' : 's'}):`;
      return [head, ...event.steps.map((s) => `  ${stepLine(s)}`)].join('\n');
    }
    case 'step':
      return stepLine(event.step, event.observation, event.observationKind);
    case 'question':
      return `? ${event.question}`;
    case 'progress':
      return event.text
        .split('\n')
        .map((line) => `  | ${line}`)
        .join('\n');
    case 'review':
      return `? the plan above (${event.planId}) waits for your review: approve, revise <what to change>, reject [why], or edit`;
    case 'completed':
      return `\nanswer: ${event.answer}`;
    case 'failed':
      return `\nthe run failed: ${event.error}`;
    case 'cancelled':
      return '\nthe run was cancelled';
  }
}

/** A session as `GET /v1/sessions/:id` sends it, and what became of a message (`POST /v1/sessions/:id/messages`). */
export type SessionState = z.infer<typeof SessionViewSchema>;
export type MessageOutcome = z.infer<typeof MessageOutcomeSchema>;

/** The line that says what the session made of a message that concerns a run (commands print their reply instead). */
export function outcomeLine(outcome: MessageOutcome): string | null {
  if (!outcome.runId) return null;
  switch (outcome.kind) {
    case 'new_run':
      return `run ${outcome.runId} started`;
    case 'retry':
      return `retrying: run ${outcome.runId} started`;
    case 'reply':
      return `(your reply went to run ${outcome.runId})`;
    case 'command':
      return null;
  }
}

/** What a resumed session still waits for: one line per run that asked a question. */
export function waitingLines(session: SessionState): string[] {
  return session.runs.filter((r) => WAITING.includes(r.status)).map((r) => `run ${r.runId} is waiting for your answer: ? ${r.question ?? r.goal}`);
}

/** A live token as the run's event stream sends it (`event: token`). */
export type TokenEvent = z.infer<typeof TokenEventSchema>;

/** The reply fields the chat prints as they stream: the answer, and the current step's thought. */
const LIVE_FIELDS: Record<string, string> = { answer: 'answer', thought: 'thinking', result: 'answer' };

/**
 * Live tokens in the chat (issue 29): what to write, without a newline, as the model's answer and
 * thought stream; `close` ends the open line before the next state is printed. A `token_reset`
 * (the call is asked again) says so and starts the field over.
 */
export class LiveTokens {
  private open: string | null = null;

  token(event: TokenEvent): string {
    const label = LIVE_FIELDS[event.field];
    if (!label) return '';
    const key = `${event.callId} ${event.field}`;
    if (this.open === key) return event.delta;
    const head = `${this.close()}  ${label}${event.taskIndex ? ` (task ${event.taskIndex})` : ''}: `;
    this.open = key;
    return head + event.delta;
  }

  reset(callId: string): string {
    if (this.open === null || !this.open.startsWith(`${callId} `)) return '';
    this.open = null;
    return ' …(interrupted; asked again)\n';
  }

  close(): string {
    if (this.open === null) return '';
    this.open = null;
    return '\n';
  }
}
