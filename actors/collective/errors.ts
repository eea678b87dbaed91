import { ClawrayError, type ClawrayErrorOptions, registerErrorClass } from '../../common/errors.js';

/**
 * A collective operation (all-reduce, broadcast, connecting the ring) failed. `fields.rank` is
 * the rank blamed for it (the one that died, refused, or sent nothing before the timeout) and
 * `fields.groupName` the group. Once a group has failed every later operation fails with the
 * same error; close it and build a new group.
 */
export class CollectiveError extends ClawrayError {
  constructor(
    message: string,
    options: ClawrayErrorOptions & { fields: { rank: number; groupName: string } },
  ) {
    super(message, options);
  }
}
registerErrorClass(CollectiveError);
