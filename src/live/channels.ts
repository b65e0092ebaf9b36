/**
 * Which token channel a process uses: PostgreSQL's LISTEN/NOTIFY when the deployment keeps its
 * memory there (MEMORY_STORE=postgres: workers and APIs may be on different hosts, and all reach
 * the database), else loopback datagrams to the APIs registered under DATA_DIR (one machine).
 */
import type { Config } from '../config';
import type { LivePublisher, LiveSubscriber } from './messages';
import { listenPg, PgPublisher } from './pg-channel';
import { listenUdp, registryDir, UdpPublisher } from './udp-channel';

export type ChannelConfig = Pick<Config, 'MEMORY_STORE' | 'DATABASE_URL' | 'dataDir'>;

export const channelKind = (config: ChannelConfig): 'postgres' | 'embedded' => (config.MEMORY_STORE === 'postgres' && config.DATABASE_URL ? 'postgres' : 'embedded');

export function openPublisher(config: ChannelConfig): LivePublisher {
  return channelKind(config) === 'postgres' ? new PgPublisher(config.DATABASE_URL!) : new UdpPublisher(registryDir(config.dataDir));
}

export async function openSubscriber(config: ChannelConfig): Promise<LiveSubscriber> {
  return channelKind(config) === 'postgres' ? listenPg(config.DATABASE_URL!) : listenUdp(registryDir(config.dataDir));
}
