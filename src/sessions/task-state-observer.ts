/**
 * Seed 000's TaskState rules as a memory observer (seed 001): whoever writes a TaskState into a
 * thread — the session's compression, or a person editing it through the threads API or the
 * inspector — gets the same rules (no live balances, no step-level pending items, no conclusions
 * about configuration). What breaks them is dropped, and the audit notes what and why. Pure.
 */
import type { ChunkContent, Operation } from '../memory/model';
import type { MemoryObserver, ObserverVerdict } from '../memory/observers';
import type { TaskStateSummaryReply } from '../calls/task-state-summary';
import { describeDropped, enforceTaskStateRules } from './task-state-rules';

/** The TaskState a chunk's content holds (`{kind: "task_state", taskState}`), or null. */
function taskStateOf(content: ChunkContent | undefined): TaskStateSummaryReply | null {
  if (content?.kind !== 'json' || typeof content.data !== 'object' || content.data === null) return null;
  const data = content.data as { kind?: unknown; taskState?: unknown };
  if (data.kind !== 'task_state' || typeof data.taskState !== 'object' || data.taskState === null) return null;
  const t = data.taskState as Partial<TaskStateSummaryReply>;
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return { CurrentGoal: text(t.CurrentGoal), ActiveFlow: text(t.ActiveFlow), OpenLoops: list(t.OpenLoops), ImportantFacts: list(t.ImportantFacts), LastDecision: text(t.LastDecision) };
}

/** `content` with its TaskState cleaned by the rules, and what was dropped; null when nothing breaks them. */
function cleaned(content: ChunkContent | undefined): { content: ChunkContent; dropped: string[] } | null {
  const taskState = taskStateOf(content);
  if (!taskState || content?.kind !== 'json') return null;
  const { taskState: kept, dropped } = enforceTaskStateRules(taskState);
  if (dropped.length === 0) return null;
  const data = content.data as { taskState: Record<string, unknown> };
  return { content: { kind: 'json', data: { ...data, taskState: { ...data.taskState, ...kept } } }, dropped: dropped.map(describeDropped) };
}

export const taskStateRules: MemoryObserver = {
  name: 'task-state-rules',
  observe(operation: Operation): ObserverVerdict {
    const notes: string[] = [];
    const clean = (content: ChunkContent | undefined): ChunkContent | undefined => {
      const fixed = cleaned(content);
      if (!fixed) return content;
      notes.push(...fixed.dropped);
      return fixed.content;
    };
    let next: Operation = operation;
    switch (operation.op) {
      case 'add':
        next = { ...operation, chunks: operation.chunks.map((c) => ({ ...c, content: clean(c.content) ?? c.content })) };
        break;
      case 'update':
        if (operation.patch.content) next = { ...operation, patch: { ...operation.patch, content: clean(operation.patch.content) ?? operation.patch.content } };
        break;
      case 'replace':
      case 'batch_replace':
        next = { ...operation, chunk: { ...operation.chunk, content: clean(operation.chunk.content) ?? operation.chunk.content } };
        break;
      default:
        return { action: 'allow' };
    }
    return notes.length === 0 ? { action: 'allow' } : { action: 'transform', operation: next, note: `dropped by the TaskState rules: ${notes.join('; ')}` };
  },
};
