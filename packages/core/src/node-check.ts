/**
 * The Node.js version check of the server bins (`import '@gatehouse/core/node-check'` before
 * anything else): see @gatehouse/audit's node-check, the lowest package, which its own bin uses.
 */
export { MIN_NODE, supportedNode } from '@gatehouse/audit/node-check';
