/**
 * `live_state_check` (seed 000's live-state refresh): before planning, which of the tools marked
 * "live" (state that changes outside the conversation) the goal concerns, so fresh snapshots are
 * taken first.
 */
import { z } from 'zod';
import { modelCall } from './call';
import { PLANNER_CONTEXT, plannerMessages } from './planner';

/** `live_state_check`: which live tools a request concerns, so their state is refreshed before planning. */
export const LiveStateCheckReplySchema = z.object({ tools: z.array(z.string().min(1).max(100)).max(20) });

const INSTRUCTION =
  'Before planning: the tools marked "live" report state that changes outside this conversation. List the live tools this goal concerns, so fresh snapshots are taken first; an empty list when none. Reply {"tools": [...]}.';

export const liveStateCheck = modelCall({
  name: 'live_state_check',
  schema: LiveStateCheckReplySchema,
  context: PLANNER_CONTEXT,
  messages: (ctx) => plannerMessages(ctx, INSTRUCTION),
  // The demo's rule: a live tool concerns a goal that names it (e.g. "balance" for account_balance).
  demo: ({ state, tools }) => {
    const words = state.goal.toLowerCase();
    const live = tools.filter((t) => t.live && t.name.split('_').some((w) => w.length > 3 && words.includes(w)));
    return { tools: live.map((t) => t.name) };
  },
});
