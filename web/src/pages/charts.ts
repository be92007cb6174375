/**
 * The pages with charts, loaded together on first use as one chunk (`charts-*.js`) with the chart
 * library (uPlot), so that the dashboard's first load does not carry it.
 */
export { QueuePage } from './QueuePage.js';
export { UsagePage } from './UsagePage.js';
