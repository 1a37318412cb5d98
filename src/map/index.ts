export { buildMap, finishMap, type MapModel, type MapOptions } from './build.js';
export { groupOfPod, mapAllows, type ConnectivityMap, type MapEdge, type MapGroup, type PortRange } from './model.js';
