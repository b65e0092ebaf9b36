/**
 * Pure transitions of a session's state (chatHistory, its runs) and the texts it
 * shows: what a run's report does to the session, the /state dump, and how
 * TaskState and recent turns are rendered for a planner prompt. No I/O.
 */
import type { EarlierTurn } from './session-chunks';
import { FINISHED, isConfirmationQuestion, WAITING, type SessionRun, type TaskState, type Turn } from './session-model';
import type { PendingApproval } from '../planning/approval';

export interface SessionLimits {
  /** chatHistory never holds more turns than this. @default 20 */
  maxTurns: number;
  /** Compress when chatHistory holds more turns than this… @default 12 */
  window: number;
  /** …or when its estimated tokens exceed this. @default 2000 */
  tokenThreshold: number;
  /** Turns chatHistory keeps after a compression. @default 6 */
  keepAfterCompression: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxTurns: 20, window: 12, tokenThreshold: 2000, keepAfterCompression: 6 };

/** What a run told its session (mirrors RunReport of session-definitions, kept here so this module stays pure). */
export interface RunStatusReport {
  runId: string;
  status: SessionRun['status'];
  question: string | null;
  finalAnswer: string | null;
  lastError: string | null;
  /** Status `waiting_approval`: the call that waits. */
  approval?: PendingApproval;
}

export function newSessionRun(runId: string, goal: string, now: Date, engine?: 'plan' | 'tree' | 'react'): SessionRun {
  return { runId, goal, status: 'planning', question: null, finalAnswer: null, lastError: null, startedAt: now.toISOString(), askedAt: null, ...(engine && engine !== 'plan' ? { engine } : {}) };
}

/**
 * Applies a run's report: its status (a yes/no question becomes `waiting_user_confirmation`), and the
 * turn the person should see — the question, the answer, or why it failed. Reports of runs the session
 * no longer knows (forgotten by /clear) change nothing.
 */
export function applyReport(runs: readonly SessionRun[], report: RunStatusReport, now: Date): { runs: SessionRun[]; turn: Turn | null } {
  const run = runs.find((r) => r.runId === report.runId);
  // An unknown run, or an ending reported again (the call that sent it was retried after a crash).
  if (!run || (FINISHED.includes(run.status) && run.status === report.status)) return { runs: [...runs], turn: null };
  const at = now.toISOString();
  // Whatever it reports, a run no longer waits on the call it waited on (a new wait brings its own).
  let next: SessionRun = { ...run, status: report.status, ...(run.status === 'waiting_approval' ? { approval: null, question: null } : {}) };
  if (report.status === 'waiting_approval') {
    next = { ...next, question: report.question, approval: report.approval ?? null, askedAt: at };
  } else if (report.status === 'waiting_user' || report.status === 'waiting_user_confirmation') {
    const question = report.question ?? '';
    next = { ...next, status: isConfirmationQuestion(question) ? 'waiting_user_confirmation' : 'waiting_user', question, askedAt: at };
  } else if (report.status === 'completed') {
    next = { ...next, question: null, finalAnswer: report.finalAnswer };
  } else if (report.status === 'failed') {
    next = { ...next, question: null, lastError: report.lastError };
  } else if (report.status === 'cancelled') {
    next = { ...next, question: null };
  }
  return { runs: runs.map((r) => (r.runId === run.runId ? next : r)), turn: reportTurn(report, at) };
}

/**
 * The turn a report adds to the conversation — the question, the answer, or why the run failed — or
 * null. The session adds it, or the call that closes the run (`recorded` reports) before it reports.
 */
export function reportTurn(report: RunStatusReport, at: string): Turn | null {
  const turn = (text: string): Turn => ({ role: 'assistant', text, at, runId: report.runId });
  switch (report.status) {
    case 'waiting_user':
    case 'waiting_user_confirmation':
    case 'waiting_approval':
      return turn(report.question ?? '');
    case 'completed':
      return turn(report.finalAnswer ?? '(no answer)');
    case 'failed':
      return turn(`That request failed: ${report.lastError ?? 'unknown error'}. Say "try again" to retry it.`);
    default:
      return null;
  }
}

/**
 * The idempotency key of the turn of a run's ending: the same whoever adds it (the closing call, or
 * the session for an ending it learned otherwise), so it reaches the thread once. A run ends once; it
 * may ask many times, so questions have none.
 */
export const endingTurnKey = (report: RunStatusReport): string | undefined => (FINISHED.includes(report.status) ? `ending:${report.runId}:${report.status}` : undefined);

/**
 * The turns a view shows: a run's answer only with its ending. The run's closing call adds the answer
 * to the thread just before its report reaches the session, so for a moment the thread holds the answer
 * of a run the session still lists as working; until the report is applied that answer is left out.
 * (What the run said before the person's latest message to it — a question it asked — stays.)
 */
export function shownTurns<T extends Pick<Turn, 'role' | 'runId'>>(turns: readonly T[], runs: readonly Pick<SessionRun, 'runId' | 'status'>[]): T[] {
  const working = new Set(runs.filter((r) => !FINISHED.includes(r.status) && !WAITING.includes(r.status)).map((r) => r.runId));
  /** Where the person's latest message to each run is. */
  const lastToRun = new Map<string, number>();
  turns.forEach((t, i) => t.role === 'user' && t.runId !== undefined && lastToRun.set(t.runId, i));
  return turns.filter((t, i) => !(t.role === 'assistant' && t.runId !== undefined && working.has(t.runId) && i > (lastToRun.get(t.runId) ?? -1)));
}

/** The session's view of a run after it was sent the person's reply. */
export const markReplied = (runs: readonly SessionRun[], runId: string): SessionRun[] =>
  runs.map((r) => (r.runId === runId ? { ...r, status: 'running' as const, question: null, ...(r.approval ? { approval: null } : {}) } : r));

/** Runs that have not ended: the ones carried across continue-as-new and cancelled by /clear. */
export const openRuns = (runs: readonly SessionRun[]): SessionRun[] => runs.filter((r) => !FINISHED.includes(r.status));

/** A finished run is forgotten once this many newer runs exist; open ones are always kept. */
export function pruneRuns(runs: readonly SessionRun[], keepFinished = 10): SessionRun[] {
  const finished = runs.filter((r) => FINISHED.includes(r.status));
  const drop = new Set(finished.slice(0, Math.max(0, finished.length - keepFinished)).map((r) => r.runId));
  return runs.filter((r) => !drop.has(r.runId));
}

/** The runs waiting for the person, e.g. to cancel them when capabilities change. */
export const waitingRuns = (runs: readonly SessionRun[]): SessionRun[] => runs.filter((r) => WAITING.includes(r.status));

/** Appends items (turns, or their token estimates) and keeps at most the last `max` of them. */
export function appendTurns<T>(history: readonly T[], items: readonly T[], max: number): T[] {
  const all = [...history, ...items];
  return all.slice(Math.max(0, all.length - max));
}

const hasTaskState = (t: TaskState) => t.CurrentGoal !== '' || t.ActiveFlow !== '' || t.OpenLoops.length > 0 || t.ImportantFacts.length > 0 || t.LastDecision !== '';

/** TaskState as prompt text; null when nothing has been summarized yet. */
export function renderTaskState(t: TaskState): string | null {
  if (!hasTaskState(t)) return null;
  const list = (items: string[]) => (items.length > 0 ? items.map((i) => `\n  - ${i}`).join('') : ' (none)');
  return [
    `CurrentGoal: ${t.CurrentGoal || '(none)'}`,
    `ActiveFlow: ${t.ActiveFlow || '(none)'}`,
    `OpenLoops:${list(t.OpenLoops)}`,
    `ImportantFacts:${list(t.ImportantFacts)}`,
    `LastDecision: ${t.LastDecision || '(none)'}`,
    ...(t.UpdatedAt ? [`UpdatedAt: ${t.UpdatedAt}`] : []),
  ].join('\n');
}

export const renderTurn = (t: Pick<Turn, 'role' | 'text'>) => `${t.role === 'user' ? 'User' : 'Assistant'}: ${t.text.replace(/\s*\n\s*/g, ' ')}`;

/** A turn as a planner sees it: with its message id, which `retrieve_message` takes (seed 004). */
const renderIdTurn = (t: Pick<Turn, 'role' | 'text' | 'messageId'>) => (t.messageId ? `[${t.messageId}] ${renderTurn(t)}` : renderTurn(t));

/** What a planner prompt shows of its session (read from the session thread, see `readConversation`). */
export interface SessionContext {
  taskState: TaskState | null;
  recentTurns: Pick<Turn, 'role' | 'text' | 'messageId'>[];
  earlier?: EarlierTurn[];
}

/** The session's part of a planner prompt: the turns compressed earlier (by id), the conversation so far and the task state. */
export function renderSessionContext(session: SessionContext): string | null {
  const parts: string[] = [];
  const earlier = session.earlier ?? [];
  if (earlier.length > 0) {
    parts.push(`Earlier turns, folded into the task state (retrieve_message fetches one's full text by its id):\n${earlier.map((t) => renderIdTurn({ ...t, text: t.preview })).join('\n')}`);
  }
  if (session.recentTurns.length > 0) parts.push(`Conversation so far (oldest first):\n${session.recentTurns.map(renderIdTurn).join('\n')}`);
  const task = session.taskState ? renderTaskState(session.taskState) : null;
  if (task) parts.push(`Task state (durable facts and goals from earlier in the conversation; check live state with tools):\n${task}`);
  return parts.length > 0 ? parts.join('\n\n') : null;
}

/** The /state reply: recent turns, task state and runs, readable in a terminal. */
export function renderSessionState(view: { chatHistory: readonly Turn[]; taskState: TaskState; runs: readonly SessionRun[]; turns: number }): string {
  const history = view.chatHistory.length > 0 ? view.chatHistory.map(renderTurn).join('\n') : '(empty)';
  const runs =
    view.runs.length > 0
      ? view.runs.map((r) => `${r.runId} [${r.status}] ${r.goal}${r.question ? ` — asks: ${r.question}` : ''}${r.lastError ? ` — error: ${r.lastError}` : ''}`).join('\n')
      : '(none)';
  return [
    `Messages so far: ${view.turns}`,
    `Recent turns (${view.chatHistory.length}):\n${history}`,
    `Task state:\n${renderTaskState(view.taskState) ?? '(empty)'}`,
    `Runs (${view.runs.length}):\n${runs}`,
  ].join('\n\n');
}
