/**
 * Live tokens (issue 29): every activity runs in a token scope, so the structured model calls it
 * makes can stream to whoever watches the run (src/llm/live-tokens.ts). The scope's key is the
 * call's idempotency key — the same on a retry, after a crash, and for a regular activity that
 * took a local call over — so a call's id survives them and the API can say `token_reset`.
 * Place after the calls interceptor, which sets a handed-over call's key.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { withTokenScope } from '../llm/live-tokens';
import type { LivePublisher } from '../live/messages';
import { idempotencyKey } from './heartbeat';

export function liveTokensInterceptor(publisher: LivePublisher): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      execute(input, next) {
        return withTokenScope({ publisher, key: idempotencyKey(), attempt: ctx.info.attempt }, () => next(input));
      },
    },
  });
}
