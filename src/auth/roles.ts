/** What an API key may do: act for its user, or administer keys and act for anyone. A leaf: response schemas read it without the key crypto. */
export const ROLES = ['user', 'admin'] as const;
export type Role = (typeof ROLES)[number];
