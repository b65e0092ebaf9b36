/**
 * The one way a person's reply reaches a run that waits for it (`relay_reply`, src/engine/core.ts):
 * the reply signal, sent by the run above it (a child's question it showed) or by its session.
 */
import { getExternalWorkflowHandle } from '@temporalio/workflow';
import type { RelayReply } from '../engine/core';
import { replySignal } from './definitions';

/** Sends the reply; rejects when the run cannot take it (it ended, or never existed). */
export const sendReply = ({ runId, text }: RelayReply): Promise<void> => getExternalWorkflowHandle(runId).signal(replySignal, { text });
