/**
 * The model of the chaos test (scripts/chaos.mjs), in its own process so that it outlives every
 * kill: the stub model server of the tests, answering any goal `chaos <tag> ask|noask` without a
 * script. Every reply is a function of the request alone, so a call repeated after a crash gets
 * the same reply again. Prints `chaos-model: <url>` once it listens.
 *
 *   plan:   tally <tag>-a → wait 2 s → [ask_user] → [subplan `chaos-child <tag>`] → tally <tag>-b → respond
 *   answer: `done <tag>` plus ` with <reply>` when the run got one (`reply-for-…` in its prompt),
 *           plus ` and sub-answer-<tag>` when its sub-plan's answer is in its prompt
 *
 *   a sub-plan's child run (goal `chaos-child <tag>`): tally <tag>-c → wait 1 s → respond, answer `sub-answer-<tag>`
 */
import { answer, askStep, cont, respondStep, toolStep } from '../../test/helpers/scenarios';
import { StubModelServer, type StubRequest } from '../../test/helpers/stub-model-server';

/** A chaos goal: `chaos r3.1 ask`, or `chaos r2.1 noask sub` for a run with a sub-plan step. */
export const CHAOS_GOAL = /^chaos (\S+) (ask|noask)( sub)?$/;
/** The goal of a sub-plan's child run: `chaos-child r2.1`. */
export const CHILD_GOAL = /^chaos-child (\S+)$/;
/** The reply a chaos run gets, as the person sends it. */
export const REPLY_TEXT = /reply-for-[\w.-]+/;

/** A child run's plan and answer: the answer names its parent's tag, so the parent's answer can be checked to carry it. */
function childReply(req: StubRequest, tag: string): unknown {
  switch (req.name) {
    case 'execution_plan':
      return { steps: [toolStep('tally', { label: `${tag}-c` }), toolStep('wait', { seconds: 1 }), respondStep] };
    case 'replan_decision':
      return cont;
    case 'final_answer':
      return answer(`sub-answer-${tag}`);
    default:
      return undefined;
  }
}

function chaosReply(req: StubRequest): unknown {
  const child = CHILD_GOAL.exec(req.goal);
  if (child) return childReply(req, child[1] ?? '');
  const m = CHAOS_GOAL.exec(req.goal);
  if (!m) return undefined;
  const [, tag = '', ask, sub] = m;
  switch (req.name) {
    case 'execution_plan':
      return {
        steps: [
          toolStep('tally', { label: `${tag}-a` }),
          toolStep('wait', { seconds: 2 }),
          ...(ask === 'ask' ? [askStep(`Which reply, ${tag}?`)] : []),
          ...(sub ? [{ type: 'subplan', description: 'delegate a count', goal: `chaos-child ${tag}` }] : []),
          toolStep('tally', { label: `${tag}-b` }),
          respondStep,
        ],
      };
    case 'replan_decision':
      return cont;
    case 'final_answer': {
      const reply = req.messages.map((m) => REPLY_TEXT.exec(m.content)?.[0]).find((r) => r !== undefined);
      // The child's answer reaches the parent's prompt as its sub-plan observation.
      const own = new RegExp(`sub-answer-${tag.replace(/\./g, '\\.')}(?![\\w.-])`);
      const subAnswer = sub && req.messages.some((m) => own.test(m.content)) ? ` and sub-answer-${tag}` : '';
      return answer(`${reply ? `done ${tag} with ${reply}` : `done ${tag}`}${subAnswer}`);
    }
    default:
      return undefined;
  }
}

async function main(): Promise<void> {
  const stub = new StubModelServer();
  stub.fallback = chaosReply;
  const url = await stub.start();
  console.log(`chaos-model: ${url}`);
  const stop = () => void stub.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
