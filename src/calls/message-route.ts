/**
 * The `message_route` call (seed 000's routing): a person writes while some of the session's runs
 * wait for an answer — is the message a reply (to which run), or a new request? Its context, its
 * prompt and the offline demo model's answer, in one place. Pure.
 */
import { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';
import { CLARIFY, demoIntents } from './demo-intents';
import { modelCall } from './call';

/**
 * `message_route` (seed 000's routing): a message sent while runs of the session wait is a reply
 * (to `runId`'s question; the newest when absent) or a new request.
 */
export const MessageRouteReplySchema = z.object({ route: z.enum(['reply', 'new_request']), runId: z.string().max(300).optional() });
export type MessageRouteReply = z.infer<typeof MessageRouteReplySchema>;

/** What the call is made from: the message, and the questions waiting for an answer, newest first. */
export interface MessageRouteContext {
  call: 'message_route';
  text: string;
  waiting: { runId: string; goal: string; question: string }[];
}

export const isMessageRouteContext = (context: { call: string }): context is MessageRouteContext => context.call === 'message_route' && 'waiting' in context;

const SYSTEM = [
  'You route the messages a person sends to an AI agent in a conversation.',
  "Some of the agent's tasks wait for the person to answer a question. Decide whether the new message answers one of those questions",
  '(route "reply", with that task\'s runId) or is a new, unrelated request (route "new_request").',
  'Short answers, names, numbers, confirmations, corrections and follow-ups to a question are replies.',
  'A message that asks for something the waiting questions did not ask about is a new request. When unsure, it is a reply to the newest question.',
].join(' ');

/** The prompt: the rules, then the message and each waiting question with its task's goal. */
export function messageRouteMessages(ctx: MessageRouteContext): ChatMessage[] {
  const waiting = ctx.waiting.map((w, i) => `${i + 1}. runId ${w.runId} — task: ${w.goal}\n   question: ${w.question}`).join('\n');
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Goal: ${ctx.text}\n\nQuestions waiting for an answer (newest first):\n${waiting}\n\nIs the message a reply to one of them, or a new request?` },
  ];
}

/**
 * The demo model's routing: a message in which it finds a request it can carry out (arithmetic,
 * notes, the time) is a new one — unless the newest question was its own "what would you like me
 * to do?", which such a message answers. Anything else is a reply to the newest question.
 */
export function demoMessageRoute(ctx: MessageRouteContext): MessageRouteReply {
  const newest = ctx.waiting[0];
  if (!newest || newest.question === CLARIFY || demoIntents(ctx.text).length === 0) return newest ? { route: 'reply', runId: newest.runId } : { route: 'new_request' };
  return { route: 'new_request' };
}

export const messageRoute = modelCall({
  name: 'message_route',
  schema: MessageRouteReplySchema,
  context: { label: 'a MessageRouteContext (text, waiting)', is: isMessageRouteContext },
  messages: messageRouteMessages,
  demo: demoMessageRoute,
});
