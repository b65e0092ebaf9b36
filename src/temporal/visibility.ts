/**
 * What Threadline asks Temporal's visibility (List Filters) and reads from its answers: quoted values,
 * and one user's runs, sessions and schedules whatever the case of the id (issue 32).
 */
import type { TypedSearchAttributes } from '@temporalio/common';
import { userKey } from '../text/user-key';
import { USER_ID_ATTR } from '../workflows/definitions';

/** A List Filter string literal. */
export const quote = (value: string): string => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The clause that finds the user's runs, sessions or schedules: `ThreadlineUserId` holds the user's key
 * (definitions.ts `userIdAttribute`), and the id as spelt on those started before user keys — which only
 * that spelling finds.
 */
export function userClause(userId: string): string {
  const values = [...new Set([userKey(userId), userId])];
  return `${USER_ID_ATTR.name} IN (${values.map(quote).join(', ')})`;
}

/**
 * A run's or session's user as it was spelt when started: its memo's, else its search attribute (a run
 * whose starter kept no user in the memo: the user's key, or the spelling itself if recorded before keys).
 */
export function userOf(info: { memo?: Record<string, unknown>; typedSearchAttributes: TypedSearchAttributes }): string | null {
  const spelt = info.memo?.userId;
  return typeof spelt === 'string' ? spelt : (info.typedSearchAttributes.get(USER_ID_ATTR) ?? null);
}
