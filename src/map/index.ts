export { buildMap } from './build.js';
export { diffClusters, formatDiff } from './diff.js';
export { formatDot, formatMarkdown } from './format-text.js';
export { formatSvg } from './format-svg.js';
export { formatHtml } from './format-html.js';
export { groupOfPod, mapAllows, type ConnectivityMap } from './model.js';
export { liveOverlay, type LiveOverlay, type NodeFlows } from './live.js';
export { nameLookups, withLookups } from './domains.js';
export { defaultFamily } from './prepare.js';
