// The dataplane's public surface: the only code that runs processes or talks netlink.

export { onToolRun, run, type RunOptions, type RunResult, type ToolRunListener } from './exec.js';
export { DataplaneCommandError, linesAround } from './errors.js';
export {
  createIptablesRunner,
  iptablesTool,
  restoreErrorLine,
  type IptablesBackend,
  type IptablesRunner,
  type IptablesRunnerOptions,
  type IptablesTable,
  type RestoreOptions,
} from './iptables.js';
export { createIpsetRunner, ipsetErrorLine, type IpsetRunner, type IpsetRunnerOptions } from './ipset.js';
export {
  countRules,
  decideBackend,
  detectBackend,
  type BackendDecision,
  type BackendEvidence,
  type DetectBackendOptions,
} from './backend.js';
export { readSysctl, writeSysctl, sysctlPath, type SysctlOptions } from './sysctl.js';
export { flushFlows, conntrackDeleteArgs, deletedCount, type FlowFilter } from './conntrack.js';
export { listLinks, linksFromIpJson, type LinkInfo, type ListLinksOptions } from './links.js';
export { detectIpvs, ipvsFrom, KUBE_IPVS_DEVICE, type IpvsDetection } from './ipvs.js';
