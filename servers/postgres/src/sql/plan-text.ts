/**
 * Renders an EXPLAIN (FORMAT JSON) plan as indented text close to PostgreSQL's own TEXT format,
 * so one EXPLAIN gives both forms (an EXPLAIN ANALYZE must not run the query twice).
 */

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

const DETAILS = [
  'Index Cond',
  'Recheck Cond',
  'Hash Cond',
  'Merge Cond',
  'Join Filter',
  'Filter',
  'Rows Removed by Filter',
  'Sort Key',
  'Group Key',
  'Output',
];

function str(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number'
    ? String(value)
    : JSON.stringify(value);
}

function title(node: PlanNode): string {
  let text = str(node['Node Type']);
  if (node.Strategy !== undefined && node['Node Type'] === 'Aggregate') {
    text = `${str(node.Strategy) === 'Hashed' ? 'Hash' : str(node.Strategy) === 'Sorted' ? 'Group' : ''}Aggregate`;
  }
  if (node['Join Type'] !== undefined && node['Join Type'] !== 'Inner') {
    text = `${text} ${str(node['Join Type'])} Join`.replace(' Join Join', ' Join');
  }
  if (node['Index Name'] !== undefined) {
    // "Bitmap Index Scan on idx", but "Index Scan using idx on table".
    text += `${node['Relation Name'] === undefined ? ' on' : ' using'} ${str(node['Index Name'])}`;
  }
  if (node['Relation Name'] !== undefined) {
    const schema = node.Schema === undefined ? '' : `${str(node.Schema)}.`;
    text += ` on ${schema}${str(node['Relation Name'])}`;
    if (node.Alias !== undefined && node.Alias !== node['Relation Name']) {
      text += ` ${str(node.Alias)}`;
    }
  }
  // A plan of masked values comes without the planner's estimates (SqlService.explain).
  const cost =
    node['Total Cost'] === undefined
      ? ''
      : `  (cost=${Number(node['Startup Cost']).toFixed(2)}..${Number(node['Total Cost']).toFixed(2)} rows=${str(node['Plan Rows'])} width=${str(node['Plan Width'])})`;
  const actual =
    node['Actual Total Time'] === undefined
      ? ''
      : ` (actual time=${Number(node['Actual Startup Time']).toFixed(3)}..${Number(node['Actual Total Time']).toFixed(3)} rows=${str(node['Actual Rows'])} loops=${str(node['Actual Loops'])})`;
  return `${text}${cost}${actual}`;
}

function render(node: PlanNode, depth: number, lines: string[]): void {
  const pad = depth === 0 ? '' : `${' '.repeat(depth * 6 - 4)}->  `;
  lines.push(`${pad}${title(node)}`);
  const inner = ' '.repeat(depth === 0 ? 2 : depth * 6 + 2);
  for (const key of DETAILS) {
    const value = node[key];
    if (value === undefined) continue;
    lines.push(`${inner}${key}: ${Array.isArray(value) ? value.map(str).join(', ') : str(value)}`);
  }
  for (const child of node.Plans ?? []) render(child, depth + 1, lines);
}

/** The text form of `[{ Plan, Planning Time?, Execution Time? }]`. */
export function planText(plan: unknown): string {
  const top = (Array.isArray(plan) ? plan[0] : plan) as
    (Record<string, unknown> & { Plan?: PlanNode }) | undefined;
  if (top?.Plan === undefined) return JSON.stringify(plan);
  const lines: string[] = [];
  render(top.Plan, 0, lines);
  if (top['Planning Time'] !== undefined)
    lines.push(`Planning Time: ${Number(top['Planning Time']).toFixed(3)} ms`);
  if (top['Execution Time'] !== undefined)
    lines.push(`Execution Time: ${Number(top['Execution Time']).toFixed(3)} ms`);
  return lines.join('\n');
}
