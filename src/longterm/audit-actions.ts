/** What long-term memory's audit names (`action` of an entry): a leaf, read by the service and by the API's response schemas. */

/** The reads the audit names (`action` of an entry of kind `read`). */
export const LONGTERM_READ_ACTIONS = ['search', 'context', 'list_facts', 'get_fact', 'fact_history', 'list_episodes', 'get_message', 'list_messages', 'list_summaries', 'entities'] as const;
export type LongTermReadAction = (typeof LONGTERM_READ_ACTIONS)[number];
/** The writes the audit names. */
export const LONGTERM_WRITE_ACTIONS = ['add_messages', 'record_fact', 'end_fact', 'record_episode', 'add_summary'] as const;
