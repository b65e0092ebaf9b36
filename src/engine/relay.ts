/**
 * A child run's question, asked through its parent: the child reports that it waits for a reply,
 * the parent shows the question as its own (an open ask_user step, status `waiting_user`), so
 * whoever follows the parent — a person, the run above it, a session — sees it and answers there;
 * the reply goes down to the child. Answered at the child directly, the parent's step is closed.
 * Shared by both engines (a plan's sub-plans and sub-agents, a tree's groups and sub-agents). Pure.
 */
import * as model from '../planning/execution-state';
import type { ExecutionState } from '../planning/execution-state';
import type { RunReport } from './contract';
import type { RelayReply } from './core';

/** A child run (a sub-plan, a sub-agent, a tree's group) reports that it waits for a reply, or resumed. */
export interface ChildReportEvent {
  kind: 'child_report';
  report: RunReport;
}

/** What the engine lends the relay: its state, and the one way it changes it (status and reports follow). */
export interface RelayHost {
  state(): ExecutionState;
  publish(next: ExecutionState): void;
  /** Adds the open ask_user step that shows the child's question (it becomes the current step); returns its id. */
  ask(question: string, childRunId: string): string;
}

export class QuestionRelay {
  #open: { childRunId: string; stepId: string } | null = null;
  /** The child whose plan review this run shows (status `waiting_review`, `reviewIn`), or null. */
  #review: string | null = null;
  /** The child whose held tool call this run shows (status `waiting_approval`, `pendingApproval.runId`), or null. */
  #approval: string | null = null;

  /** True while the parent shows a child's question that nobody answered yet. */
  get open(): boolean {
    return this.#open !== null;
  }

  /**
   * A report of `childRunId` (the child the engine waits on): its question becomes the parent's, or —
   * resumed because someone answered it there — the parent's question is closed. Reports of other runs are ignored.
   */
  report(host: RelayHost, report: RunReport, childRunId: string, now: Date): void {
    if (report.runId !== childRunId) return;
    // A child's held call or plan review: shown here until the child reports it runs again (or ends).
    if (report.status === 'waiting_approval' && report.approval) {
      // A child's held call (or one it shows of its own child): shown here, naming the run it waits in.
      this.#approval = report.runId;
      host.publish(model.showChildApproval(host.state(), { ...report.approval, runId: report.approval.runId ?? report.runId }, now));
    } else if (report.status === 'running' && this.#approval === report.runId) {
      this.#approval = null;
      host.publish(model.endChildApproval(host.state(), now));
    } else if (report.status === 'waiting_review' && report.planId) {
      this.#review = report.runId;
      host.publish(model.showChildReview(host.state(), { runId: report.runId, planId: report.planId }, now));
    } else if (report.status === 'running' && this.#review === report.runId) {
      this.#review = null;
      host.publish(model.endChildReview(host.state(), now));
    } else if (report.status === 'waiting_user' && !this.#open) {
      const stepId = host.ask(report.question ?? `run ${report.runId} waits for a reply`, report.runId);
      this.#open = { childRunId: report.runId, stepId };
      host.publish(model.waitForUser(host.state(), stepId, now));
    } else if (report.status === 'running' && this.#open) {
      host.publish(model.recordReply(host.state(), this.#open.stepId, `(answered in run ${report.runId})`, now));
      this.#open = null;
    }
  }

  /** The person's reply to the question shown: recorded here and passed down to the child (null when none is open). */
  answer(host: RelayHost, text: string, now: Date): RelayReply | null {
    const open = this.#open;
    if (!open) return null;
    this.#open = null;
    host.publish(model.recordReply(host.state(), open.stepId, text, now));
    return { kind: 'relay_reply', runId: open.childRunId, text };
  }

  /**
   * The question no longer needs an answer (its task was skipped, or the child ended without one — cancelled,
   * failed): its step is skipped. True when one was open (the caller takes the run out of `waiting_user`).
   */
  drop(host: RelayHost, now: Date): boolean {
    if (this.#review) {
      this.#review = null;
      host.publish(model.endChildReview(host.state(), now));
    }
    if (this.#approval) {
      this.#approval = null;
      host.publish(model.endChildApproval(host.state(), now));
    }
    const open = this.#open;
    if (!open) return false;
    this.#open = null;
    host.publish(model.finishStep(host.state(), open.stepId, 'skipped', null, now));
    return true;
  }
}
