export { buildMap, type MapModel, type MapOptions } from './build.js';
export { diffClusters, formatDiff, type MapDiff } from './diff.js';
export { formatDot, formatMarkdown } from './format-text.js';
export { formatSvg } from './format-svg.js';
export { formatHtml } from './format-html.js';
export { groupOfPod, mapAllows, type ConnectivityMap } from './model.js';
