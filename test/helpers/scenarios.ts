/** Scripted model conversations shared by the workflow tests and the history-fixture recorder. */
import type { StubScript } from './stub-model-server';

export const toolStep = (tool: string, args: Record<string, unknown>, description = `${tool} step`) => ({ type: 'tool', description, tool, args });
export const respondStep = { type: 'respond', description: 'Answer the user' };
export const askStep = (question: string) => ({ type: 'ask_user', description: 'Ask the user', question });
export const cont = { decision: 'continue' };
export const answer = (text: string) => ({ answer: text });

/** calculator → notes_write → notes_read → respond. */
export function multiStepToolPlan(goal: string): [string, StubScript] {
  return [
    goal,
    {
      execution_plan: [
        {
          steps: [toolStep('calculator', { expression: '6*7' }), toolStep('notes_write', { key: 'answer', value: '42' }), toolStep('notes_read', { key: 'answer' }), respondStep],
        },
      ],
      replan_decision: [cont, cont, cont],
      final_answer: [answer('6*7 is 42, and I noted it.')],
    },
  ];
}

/** ask_user → (reply) → respond. */
export function askThenAnswer(goal: string, question: string): [string, StubScript] {
  return [goal, { execution_plan: [{ steps: [askStep(question), respondStep] }], replan_decision: [cont], final_answer: [answer('Thanks, noted.')] }];
}

/** A parent whose only work is a sub-plan. */
export function withSubplan(goal: string, childGoal: string): [string, StubScript][] {
  return [
    [goal, { execution_plan: [{ steps: [{ type: 'subplan', description: 'delegate', goal: childGoal }, respondStep] }], replan_decision: [cont], final_answer: [answer('parent done')] }],
    [childGoal, { execution_plan: [{ steps: [toolStep('calculator', { expression: '2+2' }), respondStep] }], replan_decision: [cont], final_answer: [answer('child says 4')] }],
  ];
}
