import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';

/** A client for the configured server and namespace. */
export async function connectClient(config: Pick<Config, 'temporalAddress' | 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect({ address: config.temporalAddress });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}
