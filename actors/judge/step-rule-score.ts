/** A step rule's verdict on one turn. */
export interface StepRuleScore {
  score: 1 | 0 | -1;
  /** Why, in a few words (kept in the vote for the job log and tests). */
  reason: string;
}
