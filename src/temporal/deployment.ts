/**
 * Worker Deployment Versioning (issue 27): with `WORKER_DEPLOYMENT` set, every worker is a version
 * of that deployment (its build id: `WORKER_BUILD_ID`, or what its model, prompts and tools add up
 * to), runs are pinned to the version that started them and finish on it, and the long-lived
 * sessions and memory workflows move to the newest version at their next task. A deploy under
 * waiting runs then loses none: the old workers drain them. Without it, the stale-run check of
 * src/activities/code-version.ts stays the fallback.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentOptions } from '@temporalio/worker';
import { describeCodeVersion, type CodeVersion } from '../planning/code-version';

export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** A build id for a code version: the same model, prompts and tools give the same id on every host. */
export const buildIdOf = (code: CodeVersion): string => `tl-${createHash('sha256').update(describeCodeVersion(code)).digest('hex').slice(0, 12)}`;

/** The worker's version, or null when versioning is off (no `WORKER_DEPLOYMENT`). */
export function deploymentVersionOf(config: { WORKER_DEPLOYMENT?: string | undefined; WORKER_BUILD_ID?: string | undefined }, code: CodeVersion): DeploymentVersion | null {
  if (!config.WORKER_DEPLOYMENT) return null;
  return { deploymentName: config.WORKER_DEPLOYMENT, buildId: config.WORKER_BUILD_ID ?? buildIdOf(code) };
}

/** The worker options of a version: runs are pinned by default (the session and memory workflows say auto-upgrade themselves). */
export const workerDeploymentOptions = (version: DeploymentVersion): WorkerDeploymentOptions => ({ useWorkerVersioning: true, version, defaultVersioningBehavior: 'PINNED' });

/**
 * Makes `version` the deployment's current version once the server knows it (its worker has polled):
 * new runs and the sessions' next turns go to it; runs pinned to older versions stay where they are.
 * Gives up quietly after `timeoutMs` (the operator can still `temporal worker deployment set-current-version`).
 */
export async function promoteWhenPolling(client: Client, version: DeploymentVersion, options: { timeoutMs?: number; signal?: AbortSignal; log?: (message: string) => void } = {}): Promise<boolean> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const service = client.workflowService;
  const namespace = client.options.namespace;
  for (let delay = 100; Date.now() < deadline && !options.signal?.aborted; delay = Math.min(delay * 2, 2000)) {
    try {
      const described = await service.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const info = described.workerDeploymentInfo;
      const current = info?.routingConfig?.currentDeploymentVersion;
      if (current?.buildId === version.buildId) return true;
      const known = info?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === version.buildId);
      if (known) {
        await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          conflictToken: described.conflictToken,
          identity: `threadline-worker-${version.buildId}`,
          ignoreMissingTaskQueues: true,
        });
        options.log?.(`version ${version.buildId} of deployment ${version.deploymentName} is current`);
        return true;
      }
    } catch {
      // Not known yet (no poll reached the server), or another worker promoted at the same moment: look again.
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  return false;
}
