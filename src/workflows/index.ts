// Every workflow the worker registers. Workflow code only: bundled and run in Temporal's sandbox.
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { agentSessionWorkflow } from './session';
import { userMemoryWorkflow } from './user-memory';

export { planExecutionWorkflow } from './plan-execution';
export { agentSessionWorkflow, userMemoryWorkflow };

// Under Worker Deployment Versioning (WORKER_DEPLOYMENT, src/temporal/deployment.ts) runs are pinned to the
// version that started them (the worker's default); the long-lived sessions and memory workflows move to the
// newest version at their next task, so a conversation goes on across deploys. Their code stays replay-safe
// across versions (patches), as it always had to. An unversioned worker must not name a behaviour at all (the
// server refuses its tasks): only a task of a versioned worker (its version names a deployment) says it.
const autoUpgrade = () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' as const } : {});
setWorkflowOptions(autoUpgrade, agentSessionWorkflow);
setWorkflowOptions(autoUpgrade, userMemoryWorkflow);
