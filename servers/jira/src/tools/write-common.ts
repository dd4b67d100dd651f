// Arguments and words the four write tools share.
import * as z from 'zod';

export const KeyArg = z.string().min(3).max(32).describe('The issue key, e.g. OPS-12.');
export const PriorityArg = z
  .string()
  .min(1)
  .max(60)
  .optional()
  .describe('Priority name (Highest, High, Medium, Low, Lowest).');
export const PersonArg = z.string().min(1).max(120).optional();

/**
 * What a once-only write did, in words: done; done once, its answer lost and found again;
 * already done by an identical write in the window (nothing new sent); or done without the
 * check for an earlier one, which failed — so a retry may have made a duplicate.
 */
export function writeSaid(
  outcome: { deduplicated: boolean; recovered: boolean; unchecked?: string },
  verb: string,
  what: string,
): string {
  const done = `${verb[0]!.toUpperCase()}${verb.slice(1)}`;
  if (outcome.deduplicated)
    return `${done} once (an identical request within the dedupe window already did; nothing new sent):`;
  if (outcome.recovered) return `${done} once (Jira's answer was lost; found it):`;
  if (outcome.unchecked !== undefined)
    return `${done} without checking for an earlier identical one (the check failed: ${outcome.unchecked}); if this was a retry, look for ${what} made twice:`;
  return `${done}`;
}
