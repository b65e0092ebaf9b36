/** `spin_check` (seed 003's spin detection): the recent actions of a task look alike — is it going round in circles? */
import { z } from 'zod';
import { modelCall } from './call';
import { TREE_CONTEXT, treeMessages } from './tree';
import { TAG } from './demo-intents';

export const SpinCheckReplySchema = z.object({ spinning: z.boolean(), reason: z.string().max(2000) });
export type SpinCheckReply = z.infer<typeof SpinCheckReplySchema>;

const INSTRUCTION = 'The recent actions of the current task look alike. Is the task going round in circles without progress? Reply {"spinning": true|false, "reason"}.';

export const spinCheck = modelCall({
  name: 'spin_check',
  schema: SpinCheckReplySchema,
  context: TREE_CONTEXT,
  messages: (ctx) => treeMessages(ctx, { instruction: INSTRUCTION }),
  demo: () => ({ spinning: true, reason: `${TAG} the same action again without new information.` }),
});
