/**
 * The `approval_edit` call (issue 28): a tool call waits for a person's approval, and the person
 * answered in a session with a change in words ("use the key b instead"). The model turns the call's
 * arguments and the person's words into the new arguments; the session's activity checks them
 * against the tool's schema (a failing reply is sent back, then the person is told why). Its context,
 * its prompt and the offline demo model's answer, in one place. Pure.
 */
import { z } from 'zod';
import type { ChatMessage } from '../text/chat-message';
import { modelCall } from './call';

/**
 * `approval_edit` (issue 28): a person answered a tool call held for approval with a change in words;
 * the reply is the call's new arguments (checked against the tool's schema before the call runs).
 */
export const ApprovalEditReplySchema = z.object({ args: z.record(z.string(), z.unknown()) });
export type ApprovalEditReply = z.infer<typeof ApprovalEditReplySchema>;

/** What the call is made from: the held call, the tool's parameters (JSON Schema, when known) and the person's words. */
export interface ApprovalEditContext {
  call: 'approval_edit';
  tool: string;
  args: Record<string, unknown>;
  parameters: Record<string, unknown> | null;
  text: string;
}

export const isApprovalEditContext = (context: { call: string }): context is ApprovalEditContext => context.call === 'approval_edit' && 'text' in context && 'tool' in context;

const SYSTEM = [
  'An AI agent wants to call a tool, and a person must approve the call first.',
  'The person answered with a change to the call, in words. Reply with the complete new arguments of the call ("args"):',
  "the proposed arguments with the person's change applied, fitting the tool's parameters. Change nothing the person did not ask to change.",
].join(' ');

/** The prompt: the rules, then what the person said, the tool, its parameters and the proposed arguments. */
export function approvalEditMessages(ctx: ApprovalEditContext): ChatMessage[] {
  const parameters = ctx.parameters ? `\nIts parameters (JSON Schema): ${JSON.stringify(ctx.parameters)}` : '';
  return [
    { role: 'system', content: SYSTEM },
    // The person's words first, as the call's goal (as `message_route` names the message).
    {
      role: 'user',
      content: `Goal: ${ctx.text}\n\nTool: ${ctx.tool}${parameters}\nProposed arguments: ${JSON.stringify(ctx.args)}\n\nWhat are the call's new arguments, with the change the person asked for (the goal above)?`,
    },
  ];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The demo model's edit: each argument the person names gets the value they give it ("key b",
 * "value = 42", "expression to 2+3", "timezone: UTC"); a call with one argument takes the value of
 * "use X" / "X instead" for it. Anything else leaves the arguments as they were.
 */
export function demoApprovalEdit(ctx: ApprovalEditContext): ApprovalEditReply {
  const args: Record<string, unknown> = { ...ctx.args };
  const text = ctx.text.trim();
  let changed = false;
  for (const key of Object.keys(ctx.args)) {
    const m = new RegExp(`\\b${escape(key)}\\b\\s*(?:=|:|to|is|should be|as)?\\s*(?:"([^"]*)"|'([^']*)'|([^\\s,;]+))`, 'i').exec(text);
    const value = m ? (m[1] ?? m[2] ?? m[3]) : undefined;
    if (value === undefined) continue;
    args[key] = typeof ctx.args[key] === 'number' && Number.isFinite(Number(value)) ? Number(value) : value;
    changed = true;
  }
  const keys = Object.keys(ctx.args);
  if (!changed && keys.length === 1) {
    const m = /^(?:use|make it|try|with)\s+(.+?)(?:\s+instead)?[.!]?$/i.exec(text) ?? /^(.+?)\s+instead[.!]?$/i.exec(text);
    if (m?.[1]) args[keys[0]!] = m[1].replace(/^["']|["']$/g, '');
  }
  return { args };
}

export const approvalEdit = modelCall({
  name: 'approval_edit',
  schema: ApprovalEditReplySchema,
  context: { label: 'an ApprovalEditContext (tool, args, text)', is: isApprovalEditContext },
  messages: approvalEditMessages,
  demo: demoApprovalEdit,
});
