/**
 * The model of the chaos test (scripts/chaos.mjs), in its own process so that it outlives every
 * kill: the stub model server of the tests, answering any goal `chaos <tag> ask|noask` without a
 * script. Every reply is a function of the request alone, so a call repeated after a crash gets
 * the same reply again. Prints `chaos-model: <url>` once it listens.
 *
 *   plan:   tally <tag>-a → wait 2 s → [ask_user] → tally <tag>-b → respond
 *   answer: `done <tag>` plus ` with <reply>` when the run got one (`reply-for-…` in its prompt)
 */
import { answer, askStep, cont, respondStep, toolStep } from '../../test/helpers/scenarios';
import { StubModelServer, type StubRequest } from '../../test/helpers/stub-model-server';

/** A chaos goal: `chaos r3.1 ask`. */
export const CHAOS_GOAL = /^chaos (\S+) (ask|noask)$/;
/** The reply a chaos run gets, as the person sends it. */
export const REPLY_TEXT = /reply-for-[\w.-]+/;

function chaosReply(req: StubRequest): unknown {
  const m = CHAOS_GOAL.exec(req.goal);
  if (!m) return undefined;
  const [, tag, ask] = m;
  switch (req.name) {
    case 'execution_plan':
      return {
        steps: [
          toolStep('tally', { label: `${tag}-a` }),
          toolStep('wait', { seconds: 2 }),
          ...(ask === 'ask' ? [askStep(`Which reply, ${tag}?`)] : []),
          toolStep('tally', { label: `${tag}-b` }),
          respondStep,
        ],
      };
    case 'replan_decision':
      return cont;
    case 'final_answer': {
      const reply = req.messages.map((m) => REPLY_TEXT.exec(m.content)?.[0]).find((r) => r !== undefined);
      return answer(reply ? `done ${tag} with ${reply}` : `done ${tag}`);
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
